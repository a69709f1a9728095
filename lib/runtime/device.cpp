// The device registry (kinds of devices, each with its devices by index)
// and the buffer, stream and event records. The interpreter is registered
// here explicitly (not by a static initializer in its own file, which a
// static library would drop at link time); GPU back ends add their entries
// ahead of it.
#include "runtime/device.h"

#include <dlpack/dlpack.h>

#include <charconv>
#include <map>
#include <mutex>

#include "interp/interp_device.h"

namespace tl::detail {

namespace {

struct Registry {
  std::mutex mutex;
  std::vector<DeviceEntry> entries;
  std::map<std::string, std::shared_ptr<DeviceImpl>, std::less<>> created;
  Registry() {
    entries = builtin_gpu_devices();
    entries.push_back({"interp", [] { return true; }, [](int) { return interp::make_interp_device(); }, {}, {},
                       kDLCPU});
  }
};

Registry& registry() {
  static Registry r;
  return r;
}

std::string join(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
  return s.empty() ? "none" : s;
}

// "cuda:2" -> ("cuda", 2); "cuda" -> ("cuda", 0). False when what follows
// the colon is not a decimal index.
bool split_name(std::string_view name, std::string_view& kind, int& index) {
  size_t colon = name.find(':');
  kind = name.substr(0, colon);
  index = 0;
  if (colon == std::string_view::npos) return true;
  std::string_view digits = name.substr(colon + 1);
  if (digits.empty() || digits.size() > 6) return false;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
  return ec == std::errc() && end == digits.data() + digits.size() && index >= 0;
}

}  // namespace

uint64_t DeviceImpl::wrap(void* pointer, size_t bytes) {
  throw Error("device '" + name() + "' cannot wrap memory it did not allocate (the interpreter and GPU devices can)");
}

BufferImpl::BufferImpl(std::shared_ptr<DeviceImpl> d, DType t, size_t n)
    : device(std::move(d)), dtype(t), size(n) {
  address = device->alloc(bytes());
}

BufferImpl::BufferImpl(std::shared_ptr<DeviceImpl> d, DType t, size_t n, void* pointer)
    : device(std::move(d)), dtype(t), size(n), wrapped(true) {
  address = device->wrap(pointer, bytes());
}

BufferImpl::~BufferImpl() {
  // A destructor must not throw; a failed free only leaks.
  try {
    if (wrapped) device->unwrap(address);
    else device->free(address);
  } catch (...) {
  }
  if (on_release) on_release();
}

StreamImpl::~StreamImpl() {
  if (!owned) return;
  try {
    device->destroy_stream(native);
  } catch (...) {
  }
}

EventImpl::~EventImpl() {
  try {
    device->destroy_event(native);
  } catch (...) {
  }
}

void register_device(DeviceEntry entry) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  // GPU back ends go before the interpreter, which stays the fallback.
  r.entries.insert(r.entries.end() - 1, std::move(entry));
}

std::vector<std::string> device_kinds() {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  std::vector<std::string> names;
  for (const auto& e : r.entries) names.push_back(e.name);
  return names;
}

std::vector<std::string> available_devices() {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  std::vector<std::string> names;
  for (const auto& e : r.entries)
    if (e.available()) names.push_back(e.name);
  return names;
}

std::shared_ptr<DeviceImpl> get_device(std::string_view name) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  auto it = r.created.find(name);
  if (it != r.created.end()) return it->second;
  std::string_view kind;
  int index = 0;
  bool parsed = split_name(name, kind, index);
  std::vector<std::string> available;
  const DeviceEntry* found = nullptr;
  bool found_available = false;
  for (const auto& e : r.entries) {
    bool ok = e.available();
    if (ok) available.push_back(e.name);
    if (e.name == kind) {
      found = &e;
      found_available = ok;
    }
  }
  if (!found)
    throw Error("unknown device '" + std::string(name) + "' (available: " + join(available) + ")");
  if (!parsed)
    throw Error("device '" + std::string(name) + "': expected '" + std::string(kind) + "' or '" + std::string(kind) +
                ":N' with N a device index (0, 1, ...), found '" + std::string(name.substr(kind.size())) +
                "' after the name");
  if (!found_available) {
    std::string why = found->why_unavailable ? found->why_unavailable() : "";
    throw Error("device '" + std::string(name) + "' is not available on this machine" +
                (why.empty() ? "" : ": " + why) + " (available: " + join(available) + ")");
  }
  int count = found->count ? found->count() : 1;
  if (index >= count)
    throw Error("device '" + std::string(name) + "' does not exist: this machine has " + std::to_string(count) +
                " " + std::string(kind) + " device" + (count == 1 ? "" : "s") + " (" + std::string(kind) + ":0" +
                (count > 1 ? " to " + std::string(kind) + ":" + std::to_string(count - 1) : std::string()) + ")");
  // One device per kind and index: "cuda" and "cuda:0" are the same.
  std::string canonical = index == 0 ? std::string(kind) : std::string(kind) + ":" + std::to_string(index);
  // A device that fails to start is not kept: the next call tries again
  // (and says why again) rather than finding an empty entry.
  auto it_canonical = r.created.find(canonical);
  std::shared_ptr<DeviceImpl> dev =
      it_canonical != r.created.end() ? it_canonical->second : found->create(index);
  r.created.emplace(canonical, dev);
  r.created.emplace(std::string(name), dev);
  return dev;
}

std::string device_kind_of_dlpack(int type) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  for (const auto& e : r.entries)
    if (type != 0 && e.dlpack_device_type == type) return e.name;
  return "";
}

int dlpack_device_type_of(std::string_view kind) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  for (const auto& e : r.entries)
    if (e.name == kind) return e.dlpack_device_type;
  return 0;
}

}  // namespace tl::detail
