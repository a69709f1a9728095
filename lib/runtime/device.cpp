// The device registry and buffer records. The interpreter is registered
// here explicitly (not by a static initializer in its own file, which a
// static library would drop at link time); GPU back ends will add their
// entries ahead of it.
#include "runtime/device.h"

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
    entries.push_back({"interp", [] { return true; }, [] { return interp::make_interp_device(); }, {}});
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

}  // namespace

BufferImpl::BufferImpl(std::shared_ptr<DeviceImpl> d, DType t, size_t n)
    : device(std::move(d)), dtype(t), size(n) {
  address = device->alloc(bytes());
}

BufferImpl::~BufferImpl() {
  try {
    device->free(address);
  } catch (...) {
    // A destructor must not throw; a failed free only leaks.
  }
}

void register_device(DeviceEntry entry) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  // GPU back ends go before the interpreter, which stays the fallback.
  r.entries.insert(r.entries.end() - 1, std::move(entry));
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
  std::vector<std::string> available;
  const DeviceEntry* found = nullptr;
  bool found_available = false;
  for (const auto& e : r.entries) {
    bool ok = e.available();
    if (ok) available.push_back(e.name);
    if (e.name == name) {
      found = &e;
      found_available = ok;
    }
  }
  if (!found)
    throw Error("unknown device '" + std::string(name) + "' (available: " + join(available) + ")");
  if (!found_available) {
    std::string why = found->why_unavailable ? found->why_unavailable() : "";
    throw Error("device '" + std::string(name) + "' is not available on this machine" +
                (why.empty() ? "" : ": " + why) + " (available: " + join(available) + ")");
  }
  auto dev = found->create();
  r.created.emplace(std::string(name), dev);
  return dev;
}

}  // namespace tl::detail
