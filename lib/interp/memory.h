// The interpreter's view of device memory: every allocation of the "interp"
// device (host memory) and the checks each load, store and atomic passes
// before it touches memory.
//
// Accesses are checked against the buffer the pointer was derived from
// (its provenance), not against whatever lies at the address: a store that
// runs past the end of one buffer is an error even where another buffer
// happens to follow it in host memory. The provenance travels in the
// address itself, so no op but addptr has to carry it: the addresses this
// device hands out are not host addresses but windows of the 64-bit space,
// one per buffer,
//
//   address = window << 40  |  2^39 + byte offset into the buffer
//
// so a pointer keeps its buffer's window for any offset within +-2^39 bytes
// (512 GiB) of the buffer's start, and the window names the buffer. Pointer
// arithmetic that would leave the window (an offset beyond 512 GiB, the one
// way a kernel could reach another buffer's window) gives an address in
// window 0, which belongs to no buffer; addptr keeps it there (exec_elementwise.cpp).
// Host memory is reached only through translate(), never by casting an address.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

namespace tl::interp {

class Memory {
 public:
  static constexpr int kWindowBits = 40;
  static constexpr uint64_t kOffsetMask = (uint64_t(1) << kWindowBits) - 1;
  static constexpr uint64_t kOrigin = uint64_t(1) << (kWindowBits - 1);  // a buffer's first byte in its window
  static constexpr size_t kMaxBytes = size_t(kOrigin);                   // the largest buffer
  // The window of an address: the buffer it was derived from (0: none).
  static uint64_t window(uint64_t addr) { return addr >> kWindowBits; }

  Memory() = default;
  Memory(const Memory&) = delete;
  ~Memory();

  // Allocates `bytes` (zero allowed: a buffer no access can touch) of host
  // memory, aligned to 128 bytes like a GPU allocation, and returns its
  // address in a window of its own. Throws tl::Error when the host has no
  // memory for it or it exceeds kMaxBytes.
  uint64_t allocate(size_t bytes);
  // `bytes` of host memory at `host` that the caller owns (Buffer::wrap), in
  // a window of its own like an allocation, never freed here. Throws
  // tl::Error for a null pointer or more than kMaxBytes.
  uint64_t adopt(void* host, size_t bytes);
  // Forgets an allocation made by allocate() (freeing it) or adopt();
  // other addresses are an error.
  void release(uint64_t addr);
  size_t live_allocations() const { return live_; }
  // The host memory of [addr, addr + bytes), which must lie inside one live
  // allocation (copies between host and device); throws tl::Error otherwise.
  unsigned char* host(uint64_t addr, size_t bytes);

  // Held by a launch for its whole duration, and by allocate, release and
  // host, so that allocations do not change under a launch.
  std::mutex& mutex() { return mutex_; }

  // Translates accesses of a launch (call with mutex() held). Remembers the
  // last buffer, since consecutive accesses almost always fall in the same
  // one. One Checker per launch (not thread-safe).
  class Checker {
   public:
    explicit Checker(const Memory& m) : mem_(m) {}
    // The host address of the `size`-byte access at `addr` when it lies
    // inside the live buffer `addr` was derived from; null otherwise.
    unsigned char* translate(uint64_t addr, uint64_t size) {
      uint64_t off = addr - lo_;
      if (off < len_ && len_ - off >= size) return base_ + off;
      return slow_translate(addr, size);
    }
    // Why translate(addr, size) failed: "address 0x… is 16 bytes past the
    // end of the buffer the pointer was derived from (4096 bytes at 0x…)".
    std::string describe_miss(uint64_t addr, uint64_t size) const;

   private:
    unsigned char* slow_translate(uint64_t addr, uint64_t size);
    const Memory& mem_;
    uint64_t lo_ = 0, len_ = 0;  // the cached buffer's address range (none yet)
    unsigned char* base_ = nullptr;
  };

 private:
  struct Alloc {
    unsigned char* host = nullptr;  // null once freed
    size_t bytes = 0;
    bool owned = true;  // false: adopted, never freed here
  };
  uint64_t add(unsigned char* host, size_t bytes, bool owned);
  // The allocation of [addr, addr + bytes) or null (call with mutex_ held).
  const Alloc* find(uint64_t addr, uint64_t bytes) const;

  std::vector<Alloc> allocs_{Alloc{}};  // by window; window 0 is no buffer's
  // Freed windows, reused only once every window has been handed out, so a
  // stale pointer keeps naming its freed buffer for as long as possible
  // (those freed before then are found when this runs dry).
  std::deque<uint64_t> free_windows_;
  size_t live_ = 0;
  std::mutex mutex_;
};

std::string hex_address(uint64_t addr);

}  // namespace tl::interp
