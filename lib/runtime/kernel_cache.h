// The kernel cache: compiled kernels (any back end's bytes: a GPU binary
// or code object) kept in memory and on disk, so that a kernel is
// compiled once per machine rather than once per process.
//
// Key: SHA-256 over the kernel's Tile IR text, its compile options, the
// argument specialization, the target and the compiler version — everything
// the bytes depend on. (A weaker hash would let two kernels collide and
// silently run the wrong code.)
//
// Disk: one file per key, <dir>/<64 hex digits>.tlk, in TILEDSL_CACHE_DIR or
// $HOME/.cache/tiledsl (created on first use). Layout, little-endian:
//     0  magic "TLKCACHE"              8 bytes
//     8  format version (1)            u32
//    12  reserved (0)                  u32
//    16  payload length                u64
//    24  SHA-256 of the payload        32 bytes
//    56  the key's digest              32 bytes   (a renamed file is not trusted)
//    88  payload
// A file is written whole to a unique temporary name in the same directory
// and renamed over the final name, which is atomic, so readers see either
// nothing or a complete entry even when several processes write the same key.
// An entry that fails any check (short, wrong magic/version/key, length or
// checksum mismatch) is deleted and treated as a miss: never trusted.
//
// Threads: get_or_compile runs the compile function at most once per key at
// a time within a process; other threads asking for the same key wait for
// its result (OnceMap below). Processes may still compile the same kernel
// concurrently; the last rename wins and every version is complete.
#pragma once

#include <array>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tl::detail {
struct KernelImpl;
}

namespace tl::runtime {

// ---------------------------------------------------------------------------
// SHA-256 (FIPS 180-4), small and dependency-free.
class Sha256 {
 public:
  Sha256();
  void update(const void* data, size_t bytes);
  void update(std::string_view s) { update(s.data(), s.size()); }
  std::array<uint8_t, 32> finish();  // the object is spent afterwards

  static std::array<uint8_t, 32> of(const void* data, size_t bytes);
  static std::string hex(const std::array<uint8_t, 32>& digest);

 private:
  void block(const uint8_t* p);
  uint32_t h_[8];
  uint8_t buf_[64];
  size_t buf_len_ = 0;
  uint64_t total_ = 0;
};

// The version string baked into every key: a different compiler must never
// reuse another's binaries. Tiledsl's version plus the build's configure
// time (TILEDSL_BUILD_ID), so a rebuilt library starts a fresh cache.
const std::string& compiler_version();

// A cache key: the SHA-256 digest of everything a compiled kernel depends on.
struct CacheKey {
  std::array<uint8_t, 32> digest{};
  std::string hex() const { return Sha256::hex(digest); }
  bool operator==(const CacheKey&) const = default;
  auto operator<=>(const CacheKey&) const = default;

  // Each field is hashed with its length, so ("ab","c") != ("a","bc").
  static CacheKey make(std::string_view ir_text, std::string_view options, std::string_view specialization,
                       std::string_view target, std::string_view version = compiler_version());
};

// The key of a traced kernel compiled for `target` with argument facts
// `specialization` (codegen::Specialization::key()). The Tile IR text is
// printed and hashed once per kernel (memoized in KernelImpl::ir_digest), so
// a launch pays for a small hash, not for printing the IR.
CacheKey kernel_cache_key(const detail::KernelImpl& kernel, std::string_view specialization, std::string_view target);

// ---------------------------------------------------------------------------
// A map whose values are created at most once per key, by the first caller;
// concurrent callers of the same key wait for that value. If creation
// throws, the waiting callers retry (one of them creates), and the thrower
// sees the exception. Values are shared_ptr<const V> so readers never race
// a writer. Used by the kernel cache and by devices (loaded modules).
template <class K, class V>
class OnceMap {
 public:
  // `hit` (when given) is set to true when the value already existed or
  // another thread created it.
  std::shared_ptr<const V> get_or_create(const K& key, const std::function<std::shared_ptr<const V>()>& create,
                                         bool* hit = nullptr) {
    std::shared_ptr<Slot> slot;
    {
      std::unique_lock lock(mutex_);
      auto& s = slots_[key];
      if (!s) s = std::make_shared<Slot>();
      slot = s;
      for (;;) {
        if (slot->value) {
          if (hit) *hit = true;
          return slot->value;
        }
        if (!slot->busy) break;
        cv_.wait(lock);
      }
      slot->busy = true;
    }
    std::shared_ptr<const V> value;
    try {
      value = create();
    } catch (...) {
      std::lock_guard lock(mutex_);
      slot->busy = false;
      cv_.notify_all();
      throw;
    }
    std::lock_guard lock(mutex_);
    slot->value = value;
    slot->busy = false;
    cv_.notify_all();
    if (hit) *hit = false;
    return value;
  }

  std::shared_ptr<const V> find(const K& key) const {
    std::lock_guard lock(mutex_);
    auto it = slots_.find(key);
    return it == slots_.end() ? nullptr : it->second->value;
  }
  void put(const K& key, std::shared_ptr<const V> value) {
    std::lock_guard lock(mutex_);
    auto& s = slots_[key];
    if (!s) s = std::make_shared<Slot>();
    s->value = std::move(value);
    cv_.notify_all();
  }
  void clear() {
    std::lock_guard lock(mutex_);
    // A slot being created keeps its own shared_ptr and finishes unharmed.
    slots_.clear();
  }

 private:
  struct Slot {
    std::shared_ptr<const V> value;
    bool busy = false;
  };
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::map<K, std::shared_ptr<Slot>> slots_;
};

// ---------------------------------------------------------------------------
using Bytes = std::vector<uint8_t>;

class KernelCache {
 public:
  // Counters since construction (or reset_stats), for tests and benchmarks.
  struct Stats {
    int64_t memory_hits = 0;
    int64_t disk_hits = 0;
    int64_t misses = 0;             // neither in memory nor on disk
    int64_t compiles = 0;           // compile functions run by get_or_compile
    int64_t corrupt_entries = 0;    // disk entries rejected and removed
    int64_t disk_write_failures = 0;// entries that could not be saved (the compile still succeeds)
  };

  // `dir` empty: memory only.
  explicit KernelCache(std::filesystem::path dir);

  // The process-wide cache in TILEDSL_CACHE_DIR, else $HOME/.cache/tiledsl
  // (memory only when neither can be determined).
  static KernelCache& global();
  // TILEDSL_CACHE_DIR, else $HOME/.cache/tiledsl, else empty.
  static std::filesystem::path default_dir();

  const std::filesystem::path& dir() const { return dir_; }
  // <dir>/<hex>.tlk (empty when memory only).
  std::filesystem::path entry_path(const CacheKey& key) const;

  // Memory, then disk (a valid disk entry is kept in memory too).
  std::optional<Bytes> get(const CacheKey& key);
  // Memory and disk; a failed disk write only counts in stats.
  void put(const CacheKey& key, std::span<const uint8_t> bytes);
  // get(), else `compile` (once per key at a time in this process), put, and
  // return its bytes. Exceptions from `compile` propagate; nothing is stored.
  std::shared_ptr<const Bytes> get_or_compile(const CacheKey& key, const std::function<Bytes()>& compile);

  // Forgets the in-memory entries (the disk is untouched): tests use it to
  // see the disk layer, as a new process would.
  void clear_memory();

  Stats stats() const;
  void reset_stats();

  // The file format, for tools and tests.
  static Bytes encode_entry(const CacheKey& key, std::span<const uint8_t> payload);
  // The payload when `file` is a valid entry for `key`, else nullopt.
  static std::optional<Bytes> decode_entry(const CacheKey& key, std::span<const uint8_t> file);

 private:
  std::optional<Bytes> read_disk(const CacheKey& key);
  bool write_disk(const CacheKey& key, std::span<const uint8_t> bytes);

  std::filesystem::path dir_;
  OnceMap<CacheKey, Bytes> memory_;
  mutable std::mutex stats_mutex_;
  Stats stats_;
};

// What a GPU device caches for one kernel: the binary and what a launch
// needs besides it, so that a disk hit skips codegen entirely. Encoded as
// text header lines, an empty line, then the binary:
//   tiledsl-<device>-kernel 1\n entry <name>\n threads <n>\n shared <n>\n \n <binary>
struct CachedBinary {
  std::string entry;
  int threads = 0;
  int shared_bytes = 0;
  Bytes binary;
};
Bytes encode_cached_binary(std::string_view device, const CachedBinary& e);
// Throws tl::Error naming the device and the cache folder when `bytes` is
// not an entry that `device` wrote.
CachedBinary decode_cached_binary(std::string_view device, std::span<const uint8_t> bytes);

}  // namespace tl::runtime
