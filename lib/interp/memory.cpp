// Allocation windows and access checks for the interpreter's memory
// (memory.h says how an address names its buffer).
#include "interp/memory.h"

#include <cstdio>
#include <new>

#include "tiledsl/detail/ir_types.h"

namespace tl::interp {

namespace {
constexpr size_t kAlignment = 128;
// Windows below 2^23 keep every address a positive int64 (the interpreter
// holds pointers in int64 slots).
constexpr uint64_t kWindows = uint64_t(1) << (63 - Memory::kWindowBits);

uint64_t address_of(uint64_t window, uint64_t offset) { return (window << Memory::kWindowBits) + Memory::kOrigin + offset; }

std::string bytes_str(uint64_t n) { return std::to_string(n) + (n == 1 ? " byte" : " bytes"); }
}  // namespace

std::string hex_address(uint64_t addr) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(addr));
  return buf;
}

Memory::~Memory() {
  for (auto& a : allocs_)
    if (a.host && a.owned) ::operator delete(a.host, std::align_val_t(kAlignment));
}

uint64_t Memory::allocate(size_t bytes) {
  if (bytes > kMaxBytes)
    throw Error("interp: cannot allocate " + bytes_str(bytes) + ": a buffer holds at most " + bytes_str(kMaxBytes));
  // Zero-byte buffers still get host memory (one hidden byte) and a window,
  // but their recorded size is 0, so every access to them is out of bounds.
  void* p = ::operator new(bytes == 0 ? 1 : bytes, std::align_val_t(kAlignment), std::nothrow);
  if (!p) throw Error("interp: out of host memory allocating a buffer of " + bytes_str(bytes));
  try {
    return add(static_cast<unsigned char*>(p), bytes, true);
  } catch (...) {
    ::operator delete(p, std::align_val_t(kAlignment));
    throw;
  }
}

uint64_t Memory::adopt(void* host, size_t bytes) {
  if (!host) throw Error("interp: cannot wrap a null pointer");
  if (bytes > kMaxBytes)
    throw Error("interp: cannot wrap " + bytes_str(bytes) + ": a buffer holds at most " + bytes_str(kMaxBytes));
  return add(static_cast<unsigned char*>(host), bytes, false);
}

uint64_t Memory::add(unsigned char* host, size_t bytes, bool owned) {
  std::lock_guard lock(mutex_);
  uint64_t w;
  if (allocs_.size() < kWindows) {
    w = allocs_.size();
    allocs_.push_back({});
  } else {
    // Every window has been handed out: reuse freed ones, oldest first.
    // Those freed before the table filled were not queued (release queues
    // only from then on): find them once the queue runs dry.
    if (free_windows_.empty())
      for (uint64_t i = 1; i < allocs_.size(); ++i)
        if (!allocs_[i].host) free_windows_.push_back(i);
    if (free_windows_.empty())
      throw Error("interp: cannot allocate another buffer: " + std::to_string(live_) + " are live");
    w = free_windows_.front();
    free_windows_.pop_front();
  }
  allocs_[w] = {host, bytes, owned};
  ++live_;
  return address_of(w, 0);
}

void Memory::release(uint64_t addr) {
  std::lock_guard lock(mutex_);
  uint64_t w = window(addr);
  if (w == 0 || w >= allocs_.size() || !allocs_[w].host || addr != address_of(w, 0))
    throw Error("interp: free of " + hex_address(addr) + ", which is not a live allocation");
  if (allocs_[w].owned) ::operator delete(allocs_[w].host, std::align_val_t(kAlignment));
  allocs_[w].host = nullptr;
  --live_;
  if (allocs_.size() == kWindows) free_windows_.push_back(w);
}

const Memory::Alloc* Memory::find(uint64_t addr, uint64_t bytes) const {
  uint64_t w = window(addr);
  if (w == 0 || w >= allocs_.size() || !allocs_[w].host) return nullptr;
  const Alloc& a = allocs_[w];
  uint64_t off = (addr & kOffsetMask) - kOrigin;  // wraps below the start: then >= a.bytes
  return off <= a.bytes && a.bytes - off >= bytes ? &a : nullptr;
}

unsigned char* Memory::host(uint64_t addr, size_t bytes) {
  std::lock_guard lock(mutex_);
  const Alloc* a = find(addr, bytes);
  if (!a) throw Error("interp: copy of " + bytes_str(bytes) + " at " + hex_address(addr) + ", which is not inside a live buffer");
  return a->host + ((addr & kOffsetMask) - kOrigin);
}

unsigned char* Memory::Checker::slow_translate(uint64_t addr, uint64_t size) {
  const Alloc* a = mem_.find(addr, size);
  if (!a) return nullptr;
  lo_ = address_of(window(addr), 0);
  len_ = a->bytes;
  base_ = a->host;
  return base_ + (addr - lo_);
}

std::string Memory::Checker::describe_miss(uint64_t addr, uint64_t size) const {
  uint64_t w = window(addr);
  std::string at = "address " + hex_address(addr);
  if (w == 0)
    return at + " lies in no buffer: pointer arithmetic moved it more than " + bytes_str(kOrigin) +
           " (512 GiB) away from the buffer it was derived from";
  if (w >= mem_.allocs_.size()) return at + " lies in no buffer this device allocated";
  const Alloc& a = mem_.allocs_[w];
  std::string buffer = "the buffer the pointer was derived from (" + bytes_str(a.bytes) + " at " + hex_address(address_of(w, 0)) + ")";
  if (!a.host) return at + " points into a buffer that has been freed";
  int64_t off = int64_t(addr & kOffsetMask) - int64_t(kOrigin);
  if (off < 0) return at + " is " + bytes_str(uint64_t(-off)) + " before the start of " + buffer;
  if (uint64_t(off) >= a.bytes) return at + " is " + bytes_str(uint64_t(off) - a.bytes) + " past the end of " + buffer;
  return "the " + std::to_string(size) + "-byte access at " + at + " runs " + bytes_str(uint64_t(off) + size - a.bytes) +
         " past the end of " + buffer;
}

}  // namespace tl::interp
