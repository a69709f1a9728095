// The kernel cache: compiled kernels (any back end's bytes: a GPU binary
// or code object) kept in memory and on disk, so that a kernel is
// compiled once per machine rather than once per process.
//
// Key: SHA-256 over the kernel's Tile IR text, its compile options, the
// argument specialization, the target and the compiler version — everything
// the bytes depend on. (A weaker hash would let two kernels collide and
// silently run the wrong code.) Never the kernel's name alone: two kernels
// may share a name and differ in IR or options.
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
//
// Reading trusts nothing in the directory. The entry is opened without
// following a symbolic link and without blocking (a FIFO would wait for a
// writer forever, a link to /dev/zero would read without end), must be a
// regular file, and its header is checked before the payload is read: the
// file's size must be the header's plus the length it declares, at most
// kMaxPayloadBytes, so a huge garbage file costs one 88-byte read. An entry
// that fails any check (not a regular file, short, wrong
// magic/version/key, length or checksum mismatch, or a payload its consumer
// rejects) is deleted and treated as a miss: recompiled, never trusted.
//
// Writing never fails a compile: a directory that cannot be created or
// written (read-only, a path that is a file, a full disk) leaves the kernel
// in memory only. The first failure is said once on stderr, naming the
// directory and the reason, since otherwise every process would silently
// recompile every kernel.
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

#include "ir/export.h"
#include "runtime/tensor_map_param.h"

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
// reuse another's binaries. Tiledsl's version plus the linker's build id of
// the library (a digest of the linked file: any rebuild that changes the
// library changes it, with or without reconfiguring; the same build gives
// the same id in every process and directory). Without a build id note, the
// library file's size and modification time.
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
  // Forgets `key`'s value; a creation under way finishes for its callers.
  void erase(const K& key) {
    std::lock_guard lock(mutex_);
    slots_.erase(key);
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

// The largest payload a disk entry may declare (GPU binaries are a few MB).
// A larger declared length is a damaged or hostile file, rejected before
// anything but its header is read.
inline constexpr uint64_t kMaxPayloadBytes = uint64_t(256) << 20;
inline constexpr size_t kEntryHeaderBytes = 88;

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

  // Says whether a payload read from disk is one its consumer can use (a
  // device's CachedBinary, say); a payload it refuses is a corrupt entry.
  using PayloadCheck = std::function<bool(std::span<const uint8_t>)>;
  // What the cache calls to write its files: ::write unless a test replaces
  // it (to fail as a full disk would). Same contract as ::write.
  using WriteFunction = long (*)(int fd, const void* data, size_t bytes);

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

  // TILEDSL_ALWAYS_COMPILE=1, or TILEDSL_DUMP set (so that its stages are
  // printed for kernels already on disk): get_or_compile compiles once per
  // process rather than read the disk.
  static bool always_compile();
  // Memory, then disk (a valid disk entry is kept in memory too).
  std::optional<Bytes> get(const CacheKey& key);
  // Memory and disk; a failed disk write is reported (once) and counted.
  void put(const CacheKey& key, std::span<const uint8_t> bytes);
  // get(), else `compile` (once per key at a time in this process), put, and
  // return its bytes. A disk payload that `check` refuses is removed and
  // recompiled. Exceptions from `compile` propagate; nothing is stored.
  // With always_compile() the disk is not read (but still written).
  std::shared_ptr<const Bytes> get_or_compile(const CacheKey& key, const std::function<Bytes()>& compile,
                                              const PayloadCheck& check = {});
  // Forgets `key` in memory and on disk: for a payload that passed every
  // check but that its consumer still could not use (a driver refusing a
  // binary), so that the next get_or_compile recompiles it.
  void evict(const CacheKey& key);

  // Forgets the in-memory entries (the disk is untouched): tests use it to
  // see the disk layer, as a new process would.
  void clear_memory();

  Stats stats() const;
  void reset_stats();
  // The warning printed for the first failed disk write, empty if none.
  std::string write_warning() const;
  // Test seam: `write` replaces ::write for this cache's files (nullptr
  // restores it).
  void set_write_function(WriteFunction write);

  // The file format, for tools, tests and the fuzzer.
  static Bytes encode_entry(const CacheKey& key, std::span<const uint8_t> payload);
  // The payload when `file` is a valid entry for `key`, else nullopt with
  // the reason in `*why` (when given). Checks the header before touching
  // the payload; the reader on disk and this function share every check.
  static std::optional<Bytes> decode_entry(const CacheKey& key, std::span<const uint8_t> file,
                                           std::string* why = nullptr);
  // The payload length that a header (the first kEntryHeaderBytes of an
  // entry) declares for `key`, or nullopt with the reason: what the disk
  // reader checks before it reads any further.
  static std::optional<uint64_t> check_header(const CacheKey& key, std::span<const uint8_t> header,
                                              std::string* why = nullptr);

 private:
  std::optional<Bytes> read_disk(const CacheKey& key, const PayloadCheck& check);
  void reject_disk_entry(const std::filesystem::path& path);
  // Empty on success, else why the entry could not be saved.
  std::string write_disk(const CacheKey& key, std::span<const uint8_t> bytes);
  void save(const CacheKey& key, std::span<const uint8_t> bytes);

  std::filesystem::path dir_;
  OnceMap<CacheKey, Bytes> memory_;
  mutable std::mutex stats_mutex_;
  Stats stats_;
  std::string write_warning_;  // under stats_mutex_
  WriteFunction write_ = nullptr;
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
  std::vector<TensorMapParam> tensor_maps{};  // the kernel's parameters after its arguments
};
TILEDSL_SHARED Bytes encode_cached_binary(std::string_view device, const CachedBinary& e);  // used by lib/aot
// A tensor map's header line value: "bf16 0 2 a2 a3 a4 1 128 64 128" (its
// element type, base argument, rank, sizes, strides, box, swizzle; "aN"
// is argument N); and its parse, nullopt for anything else.
std::string tensor_map_line(const TensorMapParam& m);
std::optional<TensorMapParam> parse_tensor_map_line(std::string_view s);
// The entry when `bytes` is one that `device` wrote and that a launch can
// use (an entry symbol of printable characters, 1 to 1024 threads, shared
// bytes >= 0, tensor maps as tensor_map_line writes them, a non-empty
// binary), else nullopt with the reason in `*why`.
std::optional<CachedBinary> decode_cached_binary(std::string_view device, std::span<const uint8_t> bytes,
                                                 std::string* why = nullptr);

// A device's kernel for `key`: from `cache` (memory, then disk) or made by
// `compile` and cached. A cached payload that is not a valid `device` entry
// (another build's format, damage the checksum cannot see) is removed and
// recompiled like a damaged file, never an error of every later process.
// `*compiled` (when given) says whether `compile` ran.
CachedBinary get_or_compile_binary(KernelCache& cache, std::string_view device, const CacheKey& key,
                                   const std::function<CachedBinary()>& compile, bool* compiled = nullptr);

// What the fuzzer drives: the reader of one disk entry, from its bytes to a
// device's kernel, under the key the entry names (bytes 56..88) so that the
// checks past the key are reached. The CachedBinary when every check
// passes, else nullopt; never a crash, a hang or an unbounded allocation.
std::optional<CachedBinary> read_entry_bytes(std::string_view device, std::span<const uint8_t> file);

}  // namespace tl::runtime
