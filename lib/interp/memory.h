// The interpreter's view of device memory: every live allocation of the
// "interp" device (host memory) with its address range, so each load, store
// and atomic can be checked before it touches memory. An access outside every
// allocation, or straddling the end of one, is reported with the nearest
// buffer instead of corrupting the host process.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace tl::interp {

class Memory {
 public:
  Memory() = default;
  Memory(const Memory&) = delete;
  ~Memory();

  // Allocates `bytes` (zero allowed: a buffer no access can touch), aligned
  // to 128 bytes like a GPU allocation, and records its range.
  uint64_t allocate(size_t bytes);
  // Frees an allocation made by allocate(); unknown addresses are an error.
  void release(uint64_t addr);
  size_t live_allocations() const { return allocs_.size(); }

  // Held by a launch for its whole duration so that allocations do not
  // change under it.
  std::mutex& mutex() { return mutex_; }

  // Checks accesses against the allocations; remembers the last hit, since
  // consecutive accesses almost always fall in the same buffer. One Checker
  // per launch (not thread-safe).
  class Checker {
   public:
    explicit Checker(const Memory& m) : mem_(m) {}
    bool contains(uint64_t addr, uint64_t size) {
      if (addr >= lo_ && addr < hi_ && hi_ - addr >= size) return true;
      return slow_contains(addr, size);
    }
    // Why [addr, addr+size) is not accessible: "address 0x… is not inside any
    // buffer (nearest: 4096-byte buffer at 0x…, 16 bytes past its end)".
    std::string describe_miss(uint64_t addr, uint64_t size) const;

   private:
    bool slow_contains(uint64_t addr, uint64_t size);
    const Memory& mem_;
    uint64_t lo_ = 1, hi_ = 0;  // empty cached range
  };

 private:
  std::map<uint64_t, size_t> allocs_;  // start address -> size in bytes
  std::mutex mutex_;
};

std::string hex_address(uint64_t addr);

}  // namespace tl::interp
