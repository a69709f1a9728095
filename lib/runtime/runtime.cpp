// The public runtime API (include/tiledsl/runtime.h): kernel accessors,
// buffers with checked copies, device selection, and launches whose
// arguments and grid are checked (against the kernel's signature and Grid's
// limits) before any device sees them; those errors name the caller's line.
#include <atomic>
#include <charconv>
#include <cmath>
#include <cstdlib>

#include "ir/printer.h"
#include "runtime/device.h"

namespace tl {

namespace {

const detail::KernelImpl& kernel_impl(const std::shared_ptr<detail::KernelImpl>& k) {
  if (!k) throw Error("empty tl::Kernel: create one with tl::compile");
  return *k;
}
const detail::BufferImpl& buffer_impl(const std::shared_ptr<detail::BufferImpl>& b) {
  if (!b) throw Error("empty tl::Buffer: allocate one with Device::alloc or Device::upload");
  return *b;
}
detail::DeviceImpl& device_impl(const std::shared_ptr<detail::DeviceImpl>& d) {
  if (!d) throw Error("empty tl::Device: get one with tl::Device::get()");
  return *d;
}

}  // namespace

void detail::check_compile_options(const std::string& kernel, const CompileOptions& opts, const std::string& where) {
  auto bad = [&](const std::string& option, const std::string& expected, int found) {
    throw Error(where + ": kernel '" + kernel + "': " + option + " must be " + expected + ", found " +
                std::to_string(found));
  };
  auto pow2 = [](int v) { return v > 0 && (v & (v - 1)) == 0; };
  if (!(pow2(opts.num_warps) || (opts.num_warps % 12 == 0 && pow2(opts.num_warps / 12))) || opts.num_warps > 32)
    bad("num_warps", "a power of two from 1 to 32 (1024 threads of 32 lanes), or 12 or 24 (warpgroups in threes)",
        opts.num_warps);
  if (opts.num_stages < 1) bad("num_stages", "at least 1 (1: no software pipelining)", opts.num_stages);
  if (opts.num_ctas != 1 && opts.num_ctas != 2 && opts.num_ctas != 4 && opts.num_ctas != 8)
    bad("num_ctas", "1, 2, 4 or 8", opts.num_ctas);
  if (opts.programs_per_sm < 1 || opts.programs_per_sm > 8) bad("programs_per_sm", "1 to 8", opts.programs_per_sm);
  // The name becomes the binary's entry symbol: an identifier, as a C or
  // PTX one (LLVM's NVPTX back end aborts the process on anything else).
  if (!ir::is_identifier(kernel))
    throw Error(where + ": kernel name must be an identifier (letters, digits and '_', not starting with a " +
                "digit), found '" + kernel + "'");
}

uint64_t detail::next_kernel_id() {
  static std::atomic<uint64_t> last{0};
  return ++last;
}

// ---------------------------------------------------------------------------
// Kernel

const std::string& Kernel::name() const { return kernel_impl(impl_).name; }
const CompileOptions& Kernel::options() const { return kernel_impl(impl_).options; }
const std::vector<ir::Type>& Kernel::params() const { return kernel_impl(impl_).params; }
std::string Kernel::ir() const {
  const auto& k = kernel_impl(impl_);
  if (!k.fn) throw Error("kernel '" + k.name + "' has no function");
  return ir::print(*k.fn);
}

// ---------------------------------------------------------------------------
// Buffer

DType Buffer::dtype() const { return buffer_impl(impl_).dtype; }
size_t Buffer::size() const { return buffer_impl(impl_).size; }
size_t Buffer::bytes() const { return buffer_impl(impl_).bytes(); }

void detail::BufferImpl::check_host_copy(const void* host, size_t n, const char* what, const char* direction) const {
  auto fail = [&](const std::string& why) {  // the message is made only for an error
    throw Error(std::string(what) + ": copy of " + std::to_string(n) + " bytes " + direction + " a buffer of " +
                std::to_string(bytes()) + " bytes (" + std::to_string(size) + " x " + std::string(dtype_name(dtype)) +
                ")" + why);
  };
  if (n > bytes()) fail("");
  if (n && !host) fail(": expected a host pointer, found null");
}

void Buffer::copy_from_host(const void* src, size_t bytes) {
  const auto& b = buffer_impl(impl_);
  b.check_host_copy(src, bytes, "Buffer::copy_from_host", "into");
  b.device->copy_to_device(b.address, src, bytes);
}

void Buffer::copy_to_host(void* dst, size_t bytes) const {
  const auto& b = buffer_impl(impl_);
  b.check_host_copy(dst, bytes, "Buffer::copy_to_host", "out of");
  b.device->copy_to_host(dst, b.address, bytes);
}

namespace {

// What is wrong with `count` elements of `dtype` as a buffer, else "".
std::string buffer_size_error(DType dtype, size_t count) {
  if (dtype > DType::f64) return "expected an element type, found DType " + std::to_string(int(dtype));
  if (count > SIZE_MAX / size_t(byte_size(dtype)))
    return "the count times " + std::to_string(byte_size(dtype)) + " bytes does not fit in size_t";
  return "";
}

}  // namespace

Buffer Buffer::wrap(const Device& device, DType dtype, void* pointer, size_t count, std::source_location where) {
  ir::Loc loc{where.file_name(), int(where.line())};
  auto fail = [&](const std::string& what) {
    throw Error(loc.str() + ": Buffer::wrap of " + std::to_string(count) + " x " + std::string(dtype_name(dtype)) +
                ": " + what);
  };
  if (!device.impl()) fail("expected a device, found an empty tl::Device (get one with tl::Device::get())");
  if (!pointer) fail("expected a pointer to the memory, found a null pointer");
  if (count == 0) fail("expected a count of at least 1 element, found 0");
  if (auto why = buffer_size_error(dtype, count); !why.empty()) fail(why);
  try {
    return Buffer(std::make_shared<detail::BufferImpl>(device.impl(), dtype, count, pointer));
  } catch (const Error& e) {
    fail(e.what());
  }
  return {};  // unreachable: fail throws
}

bool Buffer::is_wrapped() const { return buffer_impl(impl_).wrapped; }
Device Buffer::device() const { return Device(buffer_impl(impl_).device); }

uint64_t Buffer::device_address() const {
  const auto& b = buffer_impl(impl_);
  return b.device->addresses_are_device_pointers() ? b.address : 0;
}

void Buffer::check_host_type(DType host, size_t n, const char* what, const std::source_location& where) const {
  const std::string at = detail::where_str(where) + ": Buffer::" + what + "<" + std::string(dtype_name(host)) + ">: ";
  if (!impl_) throw Error(at + "empty tl::Buffer: allocate one with Device::alloc or Device::upload");
  const auto& b = *impl_;
  if (host != b.dtype)
    throw Error(at + "expected a host vector of the buffer's element type, " + std::string(dtype_name(b.dtype)) +
                ", found one of " + std::string(dtype_name(host)));
  if (n != b.size)
    throw Error(at + "expected a host vector of the buffer's " + std::to_string(b.size) + " elements, found " +
                std::to_string(n));
}

// ---------------------------------------------------------------------------
// Device

Device Device::get(std::string_view name) {
  if (name.empty()) {
    const char* env = std::getenv("TILEDSL_DEVICE");
    if (env && *env) {
      try {
        return Device(detail::get_device(env));
      } catch (const Error& e) {
        throw Error(std::string("TILEDSL_DEVICE=") + env + ": " + e.what());
      }
    }
    auto names = detail::available_devices();
    if (names.empty()) throw Error("no device is available");
    return Device(detail::get_device(names.front()));
  }
  return Device(detail::get_device(name));
}

std::vector<std::string> Device::available() { return detail::available_devices(); }

std::string Device::name() const { return device_impl(impl_).name(); }
int Device::index() const { return device_impl(impl_).index(); }
std::string Device::target() const { return device_impl(impl_).target(); }
std::string Device::hardware() const { return device_impl(impl_).hardware(); }
int Device::processor_count() const { return device_impl(impl_).processor_count(); }

Buffer Device::alloc(DType dtype, size_t n) {
  device_impl(impl_);
  if (auto why = buffer_size_error(dtype, n); !why.empty())
    throw Error("Device::alloc of " + std::to_string(n) + " x " + std::string(dtype_name(dtype)) + ": " + why);
  return Buffer(std::make_shared<detail::BufferImpl>(impl_, dtype, n));
}

namespace {

// The device and kernel of a launch or prepare; an empty one is an error
// naming the caller's line.
std::pair<detail::DeviceImpl*, const detail::KernelImpl*> launch_parts(
    const std::shared_ptr<detail::DeviceImpl>& device, const Kernel& k, std::source_location where) {
  try {
    return {&device_impl(device), &kernel_impl(k.impl())};
  } catch (const Error& e) {
    throw Error(detail::where_str(where) + ": " + e.what());
  }
}

// The launch of both Device::launch forms; `stream` null: the device's own.
void launch_on(const std::shared_ptr<detail::DeviceImpl>& device, const Kernel& k, Grid grid,
               const std::vector<Arg>& args, const detail::StreamImpl* stream, std::source_location where) {
  auto [dev, kernel] = launch_parts(device, k, where);
  if (stream && stream->device.get() != dev)
    throw Error(detail::where_str(where) + ": launch of kernel '" + kernel->name + "' on device '" + dev->name() +
                "': expected a stream of that device, found a stream of '" + stream->device->name() + "'");
  auto checked = detail::check_launch_args(*kernel, *dev, args, where);
  detail::check_grid(*kernel, grid, where);
  // Like Triton (and unlike the GPU drivers, which reject it), a grid with a zero
  // dimension is a valid launch of no programs.
  if (grid.x == 0 || grid.y == 0 || grid.z == 0) return;
  dev->launch(*kernel, grid, checked, stream ? stream->native : dev->default_stream());
}

}  // namespace

void Device::launch(const Kernel& k, Grid grid, const std::vector<Arg>& args, std::source_location where) {
  launch_on(impl_, k, grid, args, nullptr, where);
}

void Device::launch(const Kernel& k, Grid grid, const std::vector<Arg>& args, const Stream& stream,
                    std::source_location where) {
  if (!stream.impl())
    throw Error(detail::where_str(where) + ": launch on an empty tl::Stream: make one with Device::create_stream or Stream::wrap");
  launch_on(impl_, k, grid, args, stream.impl().get(), where);
}

void Device::prepare(const Kernel& k, const std::vector<Arg>& args, std::source_location where) {
  auto [dev, kernel] = launch_parts(impl_, k, where);
  dev->prepare(*kernel, detail::check_launch_args(*kernel, *dev, args, where));
}

void Device::synchronize() { device_impl(impl_).synchronize(); }

// ---------------------------------------------------------------------------
// Launch argument checking

namespace detail {

namespace {

std::string describe(const Arg& a) {
  switch (a.kind) {
    case Arg::Kind::Pointer: return a.buffer ? "buffer of " + std::string(dtype_name(a.dtype)) : "an empty tl::Buffer";
    case Arg::Kind::Int:
      return std::string(dtype_name(a.dtype)) + " value " +
             (a.dtype == DType::u64 ? std::to_string(uint64_t(a.i)) : std::to_string(a.i));
    case Arg::Kind::Float: {
      char buf[32];
      auto end = std::to_chars(buf, buf + sizeof buf, a.f).ptr;  // shortest form: 2.5, not 2.500000
      return std::string(dtype_name(a.dtype)) + " value " + std::string(buf, end);
    }
  }
  return "?";
}

// True if the integer argument's value fits the integer dtype `t`.
bool fits(const Arg& a, DType t) {
  if (t == DType::i1) return a.dtype == DType::i1 || a.i == 0 || a.i == 1;
  bool arg_unsigned_huge = a.dtype == DType::u64 && a.i < 0;  // > INT64_MAX
  int bits = bit_width(t);
  if (is_unsigned(t)) {
    if (a.i < 0 && !arg_unsigned_huge) return false;
    if (bits == 64) return true;
    return !arg_unsigned_huge && uint64_t(a.i) <= (uint64_t(1) << bits) - 1;
  }
  if (arg_unsigned_huge) return false;
  if (bits == 64) return true;
  int64_t hi = (int64_t(1) << (bits - 1)) - 1;
  return a.i >= -hi - 1 && a.i <= hi;
}

}  // namespace

std::vector<LaunchArg> check_launch_args(const KernelImpl& k, const DeviceImpl& dev, const std::vector<Arg>& args,
                                         const std::source_location& where) {
  const auto& params = k.params;
  if (args.size() != params.size()) {
    std::string sig;
    for (const auto& p : params) sig += (sig.empty() ? "" : ", ") + p.str();
    throw Error(where_str(where) + ": kernel '" + k.name + "' expects " + std::to_string(params.size()) + " argument" +
                (params.size() == 1 ? "" : "s") + " (" + sig + "), found " + std::to_string(args.size()));
  }
  std::vector<LaunchArg> out(args.size());
  for (size_t j = 0; j < args.size(); ++j) {
    const ir::Type& p = params[j];
    const Arg& a = args[j];
    auto bad = [&](const std::string& why) {
      throw Error(where_str(where) + ": argument " + std::to_string(j + 1) + " of '" + k.name + "': expected " + p.str() +
                  ", found " + describe(a) + why);
    };
    out[j].type = p;
    if (a.kind == Arg::Kind::Pointer && !a.buffer) bad("");
    if (p.is_ptr) {
      if (a.kind != Arg::Kind::Pointer || a.dtype != p.dtype) bad("");
      if (a.buffer->device.get() != &dev)
        bad(" on device '" + a.buffer->device->name() + "', but the launch is on " +
            (a.buffer->device->name() == dev.name()
                 ? "another device of that name (each tl::Device::inspector call makes a device of its own)"
                 : "'" + dev.name() + "'"));
      out[j].address = a.buffer->address;
    } else if (is_int(p.dtype)) {
      if (a.kind != Arg::Kind::Int) bad("");
      if (!fits(a, p.dtype)) bad(", which does not fit in " + std::string(dtype_name(p.dtype)));
      out[j].i = a.i;  // fits, so already normalized for p.dtype (u64 keeps its bits)
    } else {
      if (a.kind == Arg::Kind::Pointer) bad("");
      double v = a.kind == Arg::Kind::Float ? a.f
                 : a.dtype == DType::u64    ? double(uint64_t(a.i))
                                            : double(a.i);
      out[j].f = round_to(p.dtype, v);
      // A finite value beyond the type's range would become an infinity (or
      // NaN, in f8e4m3) unasked; pass one, e.g. INFINITY, to mean one.
      if (std::isfinite(v) && !std::isfinite(out[j].f))
        bad(", which does not fit in " + std::string(dtype_name(p.dtype)) +
            " (it is beyond the type's largest finite value)");
    }
  }
  return out;
}

void check_grid(const KernelImpl& k, Grid grid, const std::source_location& where) {
  auto check = [&](const char* dim, uint32_t n, uint32_t max) {
    if (n > max)
      throw Error(where_str(where) + ": launch of kernel '" + k.name + "': grid." + dim + " must be at most " +
                  std::to_string(max) + " (CUDA's limit, which every device applies), found " + std::to_string(n));
  };
  check("x", grid.x, Grid::max_x);
  check("y", grid.y, Grid::max_y);
  check("z", grid.z, Grid::max_z);
}

}  // namespace detail
}  // namespace tl
