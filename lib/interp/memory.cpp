// Allocation tracking and access checks for the interpreter's memory.
#include "interp/memory.h"

#include <cstdio>
#include <cstdlib>
#include <new>

#include "tiledsl/detail/ir_types.h"

namespace tl::interp {

namespace {
constexpr size_t kAlignment = 128;
}

std::string hex_address(uint64_t addr) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(addr));
  return buf;
}

Memory::~Memory() {
  for (auto& [addr, size] : allocs_) ::operator delete(reinterpret_cast<void*>(addr), std::align_val_t(kAlignment));
}

uint64_t Memory::allocate(size_t bytes) {
  // Zero-byte buffers still get a distinct address (one hidden byte), but
  // their recorded size is 0, so every access to them is out of bounds.
  void* p = ::operator new(bytes == 0 ? 1 : bytes, std::align_val_t(kAlignment));
  auto addr = reinterpret_cast<uint64_t>(p);
  std::lock_guard lock(mutex_);
  allocs_[addr] = bytes;
  return addr;
}

void Memory::release(uint64_t addr) {
  std::lock_guard lock(mutex_);
  auto it = allocs_.find(addr);
  if (it == allocs_.end()) throw Error("interp: free of " + hex_address(addr) + ", which is not a live allocation");
  allocs_.erase(it);
  ::operator delete(reinterpret_cast<void*>(addr), std::align_val_t(kAlignment));
}

bool Memory::Checker::slow_contains(uint64_t addr, uint64_t size) {
  auto it = mem_.allocs_.upper_bound(addr);
  if (it == mem_.allocs_.begin()) return false;
  --it;  // the allocation starting at or before addr
  uint64_t lo = it->first, hi = it->first + it->second;
  if (addr < hi && hi - addr >= size) {
    lo_ = lo;
    hi_ = hi;
    return true;
  }
  return false;
}

std::string Memory::Checker::describe_miss(uint64_t addr, uint64_t size) const {
  const auto& allocs = mem_.allocs_;
  auto buffer = [](uint64_t start, size_t bytes) {
    return std::to_string(bytes) + "-byte buffer at " + hex_address(start);
  };
  auto after = allocs.upper_bound(addr);
  if (after != allocs.begin()) {
    auto before = std::prev(after);
    uint64_t end = before->first + before->second;
    if (addr < end)  // starts inside, runs past the end
      return "the " + std::to_string(size) + "-byte access at address " + hex_address(addr) +
             " runs " + std::to_string(addr + size - end) + " bytes past the end of the " +
             buffer(before->first, before->second);
  }
  std::string nearest;
  if (allocs.empty()) {
    nearest = "no buffer is allocated";
  } else {
    // Nearest of the buffer ending before addr and the one starting after it.
    uint64_t past = UINT64_MAX, ahead = UINT64_MAX;
    if (after != allocs.begin()) {
      auto before = std::prev(after);
      past = addr - (before->first + before->second);
    }
    if (after != allocs.end()) ahead = after->first - addr;
    if (past <= ahead) {
      auto before = std::prev(after);
      nearest = "nearest: " + buffer(before->first, before->second) + ", " + std::to_string(past) +
                " bytes past its end";
    } else {
      nearest = "nearest: " + buffer(after->first, after->second) + ", " + std::to_string(ahead) +
                " bytes before its start";
    }
  }
  return "address " + hex_address(addr) + " is not inside any buffer (" + nearest + ")";
}

}  // namespace tl::interp
