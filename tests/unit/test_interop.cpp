// Memory, streams and devices of other libraries (issue 16 §2), on the
// interpreter: devices by index, Buffer::wrap of host memory, DLPack in and
// out with the deleter called exactly when the last Buffer goes, launches
// and copies ordered on streams, events, and the message of every misuse
// (each names what was expected and what was found). test_gpu_interop.cpp
// runs the same on a GPU.
#include <catch2/catch.hpp>
#include <dlpack/dlpack.h>

#include <algorithm>
#include <vector>

#include "tiledsl/tiledsl.h"

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

constexpr int BLOCK = 128;

void interop_add(tl::ptr<float> x, tl::ptr<float> y, tl::ptr<float> out, tl::scalar<int32_t> n) {
  auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);  // [BLOCK] i32
  auto mask = offs < n;                                          // [BLOCK] i1
  tl::store(out + offs, tl::load(x + offs, mask) + tl::load(y + offs, mask), mask);
}

void interop_scale(tl::ptr<float> x, tl::scalar<int32_t> n) {
  auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);  // [BLOCK] i32
  auto mask = offs < n;                                          // [BLOCK] i1
  tl::store(x + offs, tl::load(x + offs, mask) * 2.0f, mask);
}

const tl::Kernel& add_kernel() {
  static tl::Kernel k = tl::compile(interop_add, {.name = "interop_add"});
  return k;
}
const tl::Kernel& scale_kernel() {
  static tl::Kernel k = tl::compile(interop_scale, {.name = "interop_scale"});
  return k;
}
tl::Grid grid_for(int n) { return tl::Grid{uint32_t((n + BLOCK - 1) / BLOCK)}; }

std::string at(int line) { return std::string(__FILE__) + ":" + std::to_string(line) + ": "; }

// A DLPack tensor over host memory of the test, whose deleter counts.
struct HostTensor {
  std::vector<float> data;
  std::vector<int64_t> shape, strides;
  int deleted = 0;
  DLManagedTensor managed{};

  HostTensor(std::vector<int64_t> shape_, std::vector<int64_t> strides_ = {}) : shape(std::move(shape_)), strides(std::move(strides_)) {
    int64_t n = 1;
    for (auto s : shape) n *= s;
    data.resize(size_t(n));
    for (size_t i = 0; i < data.size(); ++i) data[i] = float(i);
    DLTensor& t = managed.dl_tensor;
    t.data = data.empty() ? nullptr : data.data();
    t.device = {kDLCPU, 0};
    t.ndim = int(shape.size());
    t.dtype = {kDLFloat, 32, 1};
    t.shape = shape.data();
    t.strides = strides.empty() ? nullptr : strides.data();
    t.byte_offset = 0;
    managed.manager_ctx = this;
    managed.deleter = [](DLManagedTensor* self) { ++static_cast<HostTensor*>(self->manager_ctx)->deleted; };
  }
};

}  // namespace

TEST_CASE("interop: devices by index, with the count when out of range", "[runtime][interop]") {
  auto interp = tl::Device::get("interp");
  CHECK(tl::Device::get("interp:0").impl() == interp.impl());  // "x" and "x:0" are one device
  CHECK(interp.index() == 0);
  CHECK(interp.name() == "interp");
  CHECK(interp.target() == "interp");
  CHECK(tl::Device::inspector("sm_90a", "asm").target() == "sm_90a");
  REQUIRE_THROWS_WITH(tl::Device::get("interp:1"),
                      "device 'interp:1' does not exist: this machine has 1 interp device (interp:0)");
  REQUIRE_THROWS_WITH(tl::Device::get("interp:x"),
                      "device 'interp:x': expected 'interp' or 'interp:N' with N a device index (0, 1, ...), found "
                      "':x' after the name");
  REQUIRE_THROWS_WITH(tl::Device::get("interp:-1"), StartsWith("device 'interp:-1': expected 'interp' or 'interp:N'"));
  REQUIRE_THROWS_WITH(tl::Device::get("tpu:1"), StartsWith("unknown device 'tpu:1' (available: "));
  auto names = tl::Device::available();
  if (std::find(names.begin(), names.end(), "cuda") == names.end()) {
    REQUIRE_THROWS_WITH(tl::Device::get("cuda:1"), StartsWith("device 'cuda:1' is not available on this machine"));
  } else {
    CHECK(tl::Device::get("cuda:0").impl() == tl::Device::get("cuda").impl());
    REQUIRE_THROWS_WITH(tl::Device::get("cuda:64"), StartsWith("device 'cuda:64' does not exist: this machine has ") &&
                                                        Contains(" cuda device"));
  }
}

TEST_CASE("interop: Buffer::wrap runs kernels on host memory the caller owns", "[runtime][interop]") {
  auto dev = tl::Device::get("interp");
  const int n = 1000;  // not a multiple of BLOCK
  std::vector<float> x(n), y(n), out(n, -1.0f);
  for (int i = 0; i < n; ++i) x[i] = float(i), y[i] = 0.5f;
  {
    auto bx = tl::Buffer::wrap<float>(dev, x.data(), n);
    auto by = tl::Buffer::wrap(dev, tl::DType::f32, y.data(), n);
    auto bout = tl::Buffer::wrap<float>(dev, out.data(), n);
    CHECK(bx.is_wrapped());
    CHECK(!dev.alloc<float>(4).is_wrapped());
    CHECK(bx.size() == size_t(n));
    CHECK(bx.device().impl() == dev.impl());
    dev(add_kernel(), grid_for(n), bx, by, bout, n);
    dev.synchronize();
    // The kernel wrote the caller's memory itself, not a copy.
    for (int i = 0; i < n; ++i) REQUIRE(out[i] == float(i) + 0.5f);
    // And the buffer reads it like any other.
    CHECK(bout.download<float>() == out);
  }
  // The buffers are gone; the memory is still the caller's (ASan would see
  // a free of it), and wrapping it again works.
  out[0] = 42.0f;
  auto again = tl::Buffer::wrap<float>(dev, out.data(), 1);
  CHECK(again.download<float>() == std::vector<float>{42.0f});
}

TEST_CASE("interop: Buffer::wrap errors name the line, the expected and the found", "[runtime][interop]") {
  auto dev = tl::Device::get("interp");
  float f[4] = {};
  int line = __LINE__ + 1;
  REQUIRE_THROWS_WITH(tl::Buffer::wrap<float>(dev, nullptr, 4),
                      at(line) + "Buffer::wrap of 4 x f32: expected a pointer to the memory, found a null pointer");
  line = __LINE__ + 1;
  REQUIRE_THROWS_WITH(tl::Buffer::wrap<float>(dev, f, 0),
                      at(line) + "Buffer::wrap of 0 x f32: expected a count of at least 1 element, found 0");
  line = __LINE__ + 1;
  REQUIRE_THROWS_WITH(tl::Buffer::wrap<float>(tl::Device(), f, 4),
                      at(line) + "Buffer::wrap of 4 x f32: expected a device, found an empty tl::Device (get one "
                                 "with tl::Device::get())");
  line = __LINE__ + 1;
  REQUIRE_THROWS_WITH(tl::Buffer::wrap<double>(dev, f, SIZE_MAX / 4),
                      StartsWith(at(line) + "Buffer::wrap of ") && Contains("does not fit in size_t"));
  // A device that cannot take another library's memory says so.
  auto inspector = tl::Device::inspector("sm_90a", "tile");
  line = __LINE__ + 1;
  REQUIRE_THROWS_WITH(tl::Buffer::wrap<float>(inspector, f, 4),
                      at(line) + "Buffer::wrap of 4 x f32: device 'inspect:sm_90a' cannot wrap memory it did not "
                                 "allocate (the interpreter and GPU devices can)");
  // A wrapped buffer is checked at launch like any other.
  auto wrapped = tl::Buffer::wrap<int32_t>(dev, f, 4);
  auto y = dev.alloc<float>(4), out = dev.alloc<float>(4);
  REQUIRE_THROWS_WITH(dev(add_kernel(), tl::Grid{1}, wrapped, y, out, 4),
                      Contains("argument 1 of 'interop_add': expected ptr<f32>, found buffer of i32"));
}

TEST_CASE("interop: from_dlpack views the tensor and calls its deleter when the last Buffer goes",
          "[runtime][interop]") {
  auto dev = tl::Device::get("interp");
  HostTensor t({4, 250});  // 1000 elements, compact row-major (strides null)
  tl::Buffer copy;
  {
    tl::Buffer b = tl::from_dlpack(&t.managed);
    CHECK(b.is_wrapped());
    CHECK(b.size() == 1000);
    CHECK(b.dtype() == tl::DType::f32);
    CHECK(b.device().name() == "interp");
    dev(scale_kernel(), grid_for(1000), b, 1000);
    dev.synchronize();
    CHECK(t.data[999] == 2.0f * 999);  // written in place: no copy
    copy = b;
  }
  CHECK(t.deleted == 0);  // `copy` still refers to it
  copy = tl::Buffer();
  CHECK(t.deleted == 1);

  // Explicit compact strides, byte_offset, and a size-1 dimension whose
  // stride does not matter.
  HostTensor s({1, 3, 4}, {99, 4, 1});
  s.managed.dl_tensor.byte_offset = 4 * sizeof(float);  // start at element 4
  s.shape[1] = 2;                                       // 8 elements from there
  {
    tl::Buffer b = tl::from_dlpack(&s.managed);
    CHECK(b.size() == 8);
    CHECK(b.download<float>() == std::vector<float>{4, 5, 6, 7, 8, 9, 10, 11});
  }
  CHECK(s.deleted == 1);

  // An empty tensor (its data may be null) is an empty buffer, given back
  // all the same.
  HostTensor e({0, 3});
  {
    tl::Buffer b = tl::from_dlpack(&e.managed);
    CHECK(b.size() == 0);
  }
  CHECK(e.deleted == 1);
}

TEST_CASE("interop: to_dlpack hands out the buffer, which lives until the deleter", "[runtime][interop]") {
  auto dev = tl::Device::get("interp");
  DLManagedTensor* m = nullptr;
  {
    auto b = dev.upload(std::vector<float>{1, 2, 3, 4, 5});
    m = b.to_dlpack();
  }  // the tensor keeps the buffer alive
  REQUIRE(m);
  const DLTensor& t = m->dl_tensor;
  CHECK(t.device.device_type == kDLCPU);
  CHECK(t.device.device_id == 0);
  CHECK(t.ndim == 1);
  CHECK(t.shape[0] == 5);
  CHECK(t.strides[0] == 1);
  CHECK(t.byte_offset == 0);
  CHECK((t.dtype.code == kDLFloat && t.dtype.bits == 32 && t.dtype.lanes == 1));
  // The interpreter's data pointer is the host memory behind the buffer.
  const float* data = static_cast<const float*>(t.data);
  CHECK(std::vector<float>(data, data + 5) == std::vector<float>{1, 2, 3, 4, 5});

  // Round trip: from_dlpack of our own tensor views the same memory; its
  // deleter runs when that buffer goes, and frees the first one.
  {
    tl::Buffer back = tl::from_dlpack(m);
    dev(scale_kernel(), tl::Grid{1}, back, 5);
    dev.synchronize();
    CHECK(std::vector<float>(data, data + 5) == std::vector<float>{2, 4, 6, 8, 10});
  }
  // Each type DLPack 0.6 has maps back to itself.
  for (tl::DType dt : {tl::DType::i8, tl::DType::i16, tl::DType::i32, tl::DType::i64, tl::DType::u8, tl::DType::u16, tl::DType::u32,
                       tl::DType::u64, tl::DType::f16, tl::DType::bf16, tl::DType::f32, tl::DType::f64}) {
    DLManagedTensor* mt = dev.alloc(dt, 3).to_dlpack();
    tl::Buffer b = tl::from_dlpack(mt);
    INFO(tl::dtype_name(dt));
    CHECK(b.dtype() == dt);
  }
  REQUIRE_THROWS_WITH(dev.alloc(tl::DType::i1, 3).to_dlpack(),
                      "Buffer::to_dlpack: expected a buffer of a type DLPack 0.6 has (integers, f16, bf16, f32, f64), "
                      "found i1");
  REQUIRE_THROWS_WITH(tl::Buffer().to_dlpack(), StartsWith("Buffer::to_dlpack: empty tl::Buffer"));
}

TEST_CASE("interop: from_dlpack refuses what it cannot view, and leaves the tensor to its owner",
          "[runtime][interop]") {
  auto where = [](int line) { return at(line) + "from_dlpack: "; };
  HostTensor strided({2, 3}, {1, 2});  // column-major
  int line = __LINE__ + 1;
  REQUIRE_THROWS_WITH(tl::from_dlpack(&strided.managed),
                      where(line) + "expected a contiguous row-major tensor, found shape [2, 3] with strides [1, 2] "
                                    "(dimension 1 has stride 2, contiguous is 1; make it contiguous first)");
  CHECK(strided.deleted == 0);

  HostTensor complex({4});
  complex.managed.dl_tensor.dtype = {kDLComplex, 64, 1};
  line = __LINE__ + 1;
  REQUIRE_THROWS_WITH(tl::from_dlpack(&complex.managed),
                      where(line) + "expected a tensor of one lane of i8, i16, i32, i64, u8, u16, u32, u64, f16, bf16, "
                                    "f32 or f64, found kDLComplex of 64 bits");
  HostTensor vec({4});
  vec.managed.dl_tensor.dtype = {kDLFloat, 32, 4};
  REQUIRE_THROWS_WITH(tl::from_dlpack(&vec.managed), Contains("found kDLFloat of 32 bits x 4 lanes"));
  HostTensor i128({4});
  i128.managed.dl_tensor.dtype = {kDLInt, 128, 1};
  REQUIRE_THROWS_WITH(tl::from_dlpack(&i128.managed), Contains("found kDLInt of 128 bits"));

  HostTensor vulkan({4});
  vulkan.managed.dl_tensor.device = {kDLVulkan, 0};
  line = __LINE__ + 1;
  REQUIRE_THROWS_WITH(tl::from_dlpack(&vulkan.managed),
                      where(line) + "expected a tensor on kDLCPU (the interpreter), kDLCUDA or kDLROCM, found one "
                                    "on device type 7 device 0");
  HostTensor pinned({4});
  pinned.managed.dl_tensor.device = {kDLCUDAHost, 0};
  REQUIRE_THROWS_WITH(tl::from_dlpack(&pinned.managed), Contains("found one on kDLCUDAHost device 0"));

  // A GPU tensor where that GPU does not exist (or, here, no GPU at all).
  HostTensor gpu({4});
  gpu.managed.dl_tensor.device = {kDLCUDA, 64};
  REQUIRE_THROWS_WITH(tl::from_dlpack(&gpu.managed),
                      Contains("from_dlpack: the tensor is on kDLCUDA device 64: device 'cuda:64' "));

  HostTensor null_data({4});
  null_data.managed.dl_tensor.data = nullptr;
  REQUIRE_THROWS_WITH(tl::from_dlpack(&null_data.managed),
                      Contains("from_dlpack: expected the data of 4 elements, found a null pointer"));
  REQUIRE_THROWS_WITH(tl::from_dlpack(nullptr), Contains("from_dlpack: expected a DLManagedTensor, found a null pointer"));

  // None was taken: the caller still owns each of them.
  for (auto* t : {&strided, &complex, &vec, &i128, &vulkan, &pinned, &gpu, &null_data}) CHECK(t->deleted == 0);
}

TEST_CASE("interop: launches and copies ordered on streams, across streams by events", "[runtime][interop]") {
  auto dev = tl::Device::get("interp");
  const int n = 1000;
  std::vector<float> hx(n, 1.0f), hy(n), hout(n, 0.0f);
  for (int i = 0; i < n; ++i) hy[i] = float(i);
  auto x = dev.alloc<float>(n), y = dev.alloc<float>(n), out = dev.alloc<float>(n);
  tl::Stream s1 = dev.create_stream(), s2 = dev.create_stream();
  CHECK(s1.native() == nullptr);  // the interpreter has no driver handle
  CHECK(s1.device().impl() == dev.impl());
  tl::Event start = dev.create_event(), scaled = dev.create_event(), done = dev.create_event();

  // s1: upload x and y, x *= 2 twice; s2 waits for that, then out = x + y.
  start.record(s1);
  x.copy_from_host_async(hx.data(), n * sizeof(float), s1);
  y.copy_from_host_async(hy.data(), n * sizeof(float), s1);
  dev.launch(scale_kernel(), grid_for(n), {x, n}, s1);
  s1(scale_kernel(), grid_for(n), x, n);
  scaled.record(s1);
  s2.wait(scaled);
  s2(add_kernel(), grid_for(n), x, y, out, n);
  out.copy_to_host_async(hout.data(), n * sizeof(float), s2);
  done.record(s2);
  done.synchronize();
  for (int i = 0; i < n; ++i) REQUIRE(hout[i] == 4.0f + float(i));
  CHECK(tl::Event::elapsed_ms(start, scaled) >= 0.0);
  s1.synchronize();
  s2.synchronize();

  // The device's own stream is a Stream too.
  dev.stream()(scale_kernel(), grid_for(n), out, n);
  dev.stream().synchronize();
  CHECK(out.download<float>()[10] == 2.0f * (4.0f + 10));

  // A stream may wrap a handle of another library (the interpreter checks nothing).
  int token = 0;
  tl::Stream foreign = tl::Stream::wrap(dev, &token);
  foreign(scale_kernel(), grid_for(n), out, n);
  CHECK(out.download<float>()[10] == 4.0f * (4.0f + 10));
}

TEST_CASE("interop: stream and event misuse names the expected and the found", "[runtime][interop]") {
  auto dev = tl::Device::get("interp");
  auto other = tl::Device::inspector("sm_90a", "tile");
  auto x = dev.alloc<float>(8);
  tl::Stream s = dev.create_stream();
  tl::Stream elsewhere = other.create_stream();
  int line = __LINE__ + 1;
  REQUIRE_THROWS_WITH(dev.launch(scale_kernel(), tl::Grid{1}, {x, 8}, elsewhere),
                      at(line) + "launch of kernel 'interop_scale' on device 'interp': expected a stream of that "
                                 "device, found a stream of 'inspect:sm_90a'");
  line = __LINE__ + 1;
  REQUIRE_THROWS_WITH(dev.launch(scale_kernel(), tl::Grid{1}, {x, 8}, tl::Stream()),
                      at(line) + "launch on an empty tl::Stream: make one with Device::create_stream or Stream::wrap");
  line = __LINE__ + 1;
  REQUIRE_THROWS_WITH(tl::Stream()(scale_kernel(), tl::Grid{1}, x, 8),
                      at(line) + "launch on an empty tl::Stream: make one with Device::create_stream or Stream::wrap");
  // Launch errors on a stream name the caller's line like any launch.
  line = __LINE__ + 1;
  REQUIRE_THROWS_WITH(s(scale_kernel(), tl::Grid{1}, x), StartsWith(at(line) + "kernel 'interop_scale' expects 2 arguments"));

  float host[16] = {};
  REQUIRE_THROWS_WITH(x.copy_from_host_async(host, sizeof host, s),
                      "Buffer::copy_from_host_async: copy of 64 bytes into a buffer of 32 bytes (8 x f32)");
  REQUIRE_THROWS_WITH(x.copy_to_host_async(host, 32, elsewhere),
                      "Buffer::copy_to_host_async: expected a stream of device 'interp', found one of "
                      "'inspect:sm_90a'");

  tl::Event e = dev.create_event(), f = dev.create_event();
  REQUIRE_THROWS_WITH(e.synchronize(), "Event::synchronize: expected an event recorded on a stream (Event::record), "
                                       "found one never recorded");
  f.record(s);
  REQUIRE_THROWS_WITH(tl::Event::elapsed_ms(e, f),
                      "Event::elapsed_ms: expected two recorded events, found the start event never recorded");
  REQUIRE_THROWS_WITH(e.record(elsewhere),
                      "Event::record: expected a stream of device 'interp', found one of 'inspect:sm_90a'");
  REQUIRE_THROWS_WITH(elsewhere.wait(f), "Stream::wait: expected an event of device 'inspect:sm_90a', found one of 'interp'");
  REQUIRE_THROWS_WITH(tl::Event().synchronize(), StartsWith("Event::synchronize: empty tl::Event"));
  REQUIRE_THROWS_WITH(tl::Stream().synchronize(), StartsWith("Stream::synchronize: empty tl::Stream"));
  REQUIRE_THROWS_WITH(tl::Stream::wrap(tl::Device(), nullptr), StartsWith("Stream::wrap: expected a device"));
  // Waiting for an event never recorded waits for nothing, as in CUDA.
  s.wait(dev.create_event());
}
