// Kernel cache: SHA-256 against the FIPS test vectors, key construction,
// the entry format's checks, memory and disk layers, corrupt entries being
// recompiled, one compile per key across threads, and several processes
// writing one key. Then the faults of issue 11: garbage, foreign, malformed
// and huge entries, entries that are FIFOs, links or directories, unusable
// directories, a full disk, 8 processes compiling into one empty directory,
// and kernels that share a name (interpreter, inspector, CUDA).
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <thread>

#include "codegen/compile.h"
#include "runtime/device.h"
#include "runtime/kernel.h"
#include "runtime/kernel_cache.h"
#include "temp_dir.h"
#include "tiledsl/tiledsl.h"

using tl::runtime::Bytes;
using tl::runtime::CacheKey;
using tl::runtime::KernelCache;
using tl::runtime::Sha256;
namespace fs = std::filesystem;

namespace {

std::string sha_hex(std::string_view s) { return Sha256::hex(Sha256::of(s.data(), s.size())); }

Bytes bytes_of(std::string_view s) { return Bytes(s.begin(), s.end()); }

Bytes read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return Bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}
void write_file(const fs::path& p, const Bytes& b) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
}

int count_temporaries(const fs::path& dir) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().string().find(".tmp.") != std::string::npos) ++n;
  return n;
}

CacheKey test_key(std::string_view ir = "ir") { return CacheKey::make(ir, "opts", "d16,v1", "sm_90a", "test-version"); }

template <int BLOCK>
void scale_kernel(tl::ptr<float> x, tl::scalar<int32_t> n) {
  auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);  // [BLOCK] i32
  auto mask = offs < n;                                          // [BLOCK] i1
  tl::store(x + offs, tl::load(x + offs, mask) * 2.0f, mask);
}

}  // namespace

TEST_CASE("sha256 matches the FIPS 180-2 test vectors", "[cache]") {
  CHECK(sha_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(sha_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(sha_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  std::string million(1000000, 'a');
  CHECK(sha_hex(million) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  // Fed in odd-sized pieces, the same digest.
  Sha256 s;
  for (size_t i = 0; i < million.size(); i += 77) s.update(million.data() + i, std::min<size_t>(77, million.size() - i));
  CHECK(Sha256::hex(s.finish()) == sha_hex(million));
}

TEST_CASE("cache keys depend on every field, and only on them", "[cache]") {
  CacheKey base = CacheKey::make("ir", "opts", "spec", "sm_90a", "v1");
  CHECK(base == CacheKey::make("ir", "opts", "spec", "sm_90a", "v1"));
  CHECK(base.hex().size() == 64);
  CHECK(base != CacheKey::make("ir2", "opts", "spec", "sm_90a", "v1"));
  CHECK(base != CacheKey::make("ir", "opts2", "spec", "sm_90a", "v1"));
  CHECK(base != CacheKey::make("ir", "opts", "spec2", "sm_90a", "v1"));
  CHECK(base != CacheKey::make("ir", "opts", "spec", "sm_80", "v1"));
  CHECK(base != CacheKey::make("ir", "opts", "spec", "sm_90a", "v2"));
  // Moving text across a field boundary changes the key.
  CHECK(CacheKey::make("ab", "c", "", "", "") != CacheKey::make("a", "bc", "", "", ""));
  CHECK(!tl::runtime::compiler_version().empty());
}

TEST_CASE("kernel cache keys of traced kernels", "[cache]") {
  // Source locations are part of the IR text (device asserts print them), so
  // "the same kernel twice" means traced from the same call site.
  auto trace = [] { return tl::compile(scale_kernel<64>, {.name = "scale"}); };
  tl::Kernel a = trace();
  tl::Kernel a_again = trace();
  tl::Kernel b = tl::compile(scale_kernel<128>, {.name = "scale"});
  tl::Kernel a_8warps = tl::compile(scale_kernel<64>, {.name = "scale", .num_warps = 8});
  tl::Kernel a_unfused = tl::compile(scale_kernel<64>, {.name = "scale", .fp_fusion = false});
  tl::Kernel a_cluster = tl::compile(scale_kernel<64>, {.name = "scale", .num_ctas = 2});
  auto key = [](const tl::Kernel& k, std::string spec = "d16,d16", std::string target = "sm_90a") {
    return tl::runtime::kernel_cache_key(*k.impl(), spec, target);
  };
  CacheKey ka = key(a);
  CHECK(!a.impl()->ir_digest.empty());  // memoized on first use
  CHECK(ka == key(a));
  CHECK(ka == key(a_again));            // same IR traced twice
  CHECK(ka != key(b));                  // different IR
  CHECK(ka != key(a_8warps));           // different options
  CHECK(ka != key(a_unfused));
  CHECK(ka != key(a_cluster));
  CHECK(ka != key(a, "d16,d1"));        // different specialization
  CHECK(ka != key(a, "d16,d16", "sm_80"));
}

TEST_CASE("cache entries: encode, decode, and every kind of damage rejected", "[cache]") {
  CacheKey key = test_key();
  Bytes payload = bytes_of("a cubin would be here");
  Bytes file = KernelCache::encode_entry(key, payload);
  REQUIRE(KernelCache::decode_entry(key, file) == payload);
  CHECK(!KernelCache::decode_entry(test_key("other"), file));  // a file under the wrong name

  for (size_t i = 0; i < file.size(); ++i) {
    Bytes flipped = file;
    flipped[i] ^= 0x20;
    INFO("flipped byte " << i);
    CHECK(!KernelCache::decode_entry(key, flipped));
  }
  for (size_t n : {size_t(0), size_t(10), size_t(87), size_t(88), file.size() - 1}) {
    INFO("truncated to " << n << " bytes");
    CHECK(!KernelCache::decode_entry(key, std::span<const uint8_t>(file.data(), n)));
  }
  Bytes longer = file;
  longer.push_back(0);
  CHECK(!KernelCache::decode_entry(key, longer));
  // An empty payload is a valid entry.
  CHECK(KernelCache::decode_entry(key, KernelCache::encode_entry(key, {})) == Bytes{});
}

TEST_CASE("kernel cache: miss, compile, memory hit, disk hit", "[cache]") {
  TempDir tmp;
  fs::path dir = tmp.path / "nested" / "cache";  // created on first write
  KernelCache cache(dir);
  CacheKey key = test_key();

  CHECK(!cache.get(key));
  CHECK(cache.stats().misses == 1);

  int compiles = 0;
  auto compile = [&] {
    ++compiles;
    return bytes_of("binary");
  };
  CHECK(*cache.get_or_compile(key, compile) == bytes_of("binary"));
  CHECK(compiles == 1);
  REQUIRE(fs::exists(cache.entry_path(key)));
  CHECK(cache.entry_path(key).filename() == key.hex() + ".tlk");
  CHECK(count_temporaries(dir) == 0);

  CHECK(*cache.get_or_compile(key, compile) == bytes_of("binary"));
  CHECK(compiles == 1);
  CHECK(cache.stats().memory_hits == 1);

  // A new process sees the disk entry: same as forgetting memory.
  cache.clear_memory();
  CHECK(*cache.get_or_compile(key, compile) == bytes_of("binary"));
  CHECK(compiles == 1);
  CHECK(cache.stats().disk_hits == 1);

  KernelCache other(dir);
  CHECK(other.get(key) == bytes_of("binary"));
  CHECK(other.stats().disk_hits == 1);

  // put() replaces, on disk too.
  other.put(key, bytes_of("newer"));
  KernelCache third(dir);
  CHECK(third.get(key) == bytes_of("newer"));
}

TEST_CASE("kernel cache: a corrupt or truncated entry is removed and recompiled", "[cache]") {
  TempDir tmp;
  CacheKey key = test_key();
  Bytes good = bytes_of("the real binary, long enough to truncate");
  {
    KernelCache cache(tmp.path);
    cache.put(key, good);
  }
  fs::path path = KernelCache(tmp.path).entry_path(key);
  Bytes file = read_file(path);
  REQUIRE(file.size() == 88 + good.size());

  struct Damage {
    const char* what;
    std::function<Bytes(Bytes)> apply;
  };
  std::vector<Damage> damages = {
      {"payload byte flipped", [](Bytes b) { b[b.size() - 3] ^= 1; return b; }},
      {"checksum byte flipped", [](Bytes b) { b[30] ^= 0x80; return b; }},
      {"magic overwritten", [](Bytes b) { b[0] = 'X'; return b; }},
      {"format version changed", [](Bytes b) { b[8] = 99; return b; }},
      {"truncated payload", [](Bytes b) { b.resize(b.size() - 5); return b; }},
      {"truncated header", [](Bytes b) { b.resize(40); return b; }},
      {"empty file", [](Bytes) { return Bytes{}; }},
      {"length field grown", [](Bytes b) { b[16] += 1; return b; }},
  };
  for (const auto& d : damages) {
    INFO(d.what);
    write_file(path, d.apply(file));
    KernelCache cache(tmp.path);
    int compiles = 0;
    auto out = cache.get_or_compile(key, [&] {
      ++compiles;
      return good;
    });
    CHECK(*out == good);
    CHECK(compiles == 1);
    CHECK(cache.stats().corrupt_entries == 1);
    CHECK(cache.stats().disk_hits == 0);
    // The recompiled entry replaced the damaged one.
    CHECK(read_file(path) == file);
  }

  // get() does not trust a damaged entry either, and deletes it.
  write_file(path, Bytes(file.begin(), file.begin() + 60));
  KernelCache cache(tmp.path);
  CHECK(!cache.get(key));
  CHECK(cache.stats().corrupt_entries == 1);
  CHECK(!fs::exists(path));
}

TEST_CASE("kernel cache: threads asking for one key compile it once", "[cache]") {
  TempDir tmp;
  KernelCache cache(tmp.path);
  CacheKey key = test_key();
  std::atomic<int> compiles{0};
  constexpr int kThreads = 8;
  std::vector<std::shared_ptr<const Bytes>> results(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      results[size_t(t)] = cache.get_or_compile(key, [&] {
        ++compiles;
        // Long enough that every other thread arrives while this one compiles.
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        return bytes_of("once");
      });
    });
  for (auto& th : threads) th.join();
  CHECK(compiles == 1);
  for (const auto& r : results) {
    REQUIRE(r);
    CHECK(*r == bytes_of("once"));
  }
  CHECK(cache.stats().compiles == 1);
  CHECK(cache.stats().memory_hits == kThreads - 1);

  // Different keys compile independently.
  std::atomic<int> distinct{0};
  threads.clear();
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      cache.get_or_compile(test_key("kernel" + std::to_string(t)), [&] {
        ++distinct;
        return bytes_of("k");
      });
    });
  for (auto& th : threads) th.join();
  CHECK(distinct == kThreads);
}

TEST_CASE("kernel cache: a failed compile stores nothing and the next caller retries", "[cache]") {
  TempDir tmp;
  KernelCache cache(tmp.path);
  CacheKey key = test_key();
  CHECK_THROWS_WITH(cache.get_or_compile(key, []() -> Bytes { throw tl::Error("codegen failed"); }),
                    "codegen failed");
  CHECK(!fs::exists(cache.entry_path(key)));
  int compiles = 0;
  CHECK(*cache.get_or_compile(key, [&] {
    ++compiles;
    return bytes_of("ok");
  }) == bytes_of("ok"));
  CHECK(compiles == 1);
}

TEST_CASE("kernel cache: several processes writing one key leave a valid entry", "[cache]") {
  TempDir tmp;
  CacheKey key = test_key();
  // A payload of several pages, so a torn write would show.
  Bytes payload(64 << 10);
  for (size_t i = 0; i < payload.size(); ++i) payload[i] = uint8_t(i * 131 + 7);

  constexpr int kProcesses = 6;
  std::vector<pid_t> children;
  for (int p = 0; p < kProcesses; ++p) {
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      // Child: no Catch2 here; the exit code says whether every read was valid.
      int status = 0;
      for (int round = 0; round < 10; ++round) {
        KernelCache cache(tmp.path);
        cache.put(key, payload);
        KernelCache reader(tmp.path);
        auto got = reader.get(key);
        // A reader may find no entry (another process removed nothing valid,
        // but rename is atomic, so a present entry must be complete).
        if (got && *got != payload) status = 1;
        if (reader.stats().corrupt_entries != 0) status = 2;
      }
      _exit(status);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = -1;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }
  KernelCache cache(tmp.path);
  CHECK(cache.get(key) == payload);
  CHECK(cache.stats().corrupt_entries == 0);
  CHECK(count_temporaries(tmp.path) == 0);
}

TEST_CASE("kernel cache: memory-only and the default directory", "[cache]") {
  KernelCache memory_only{fs::path()};
  CacheKey key = test_key();
  int compiles = 0;
  auto compile = [&] {
    ++compiles;
    return bytes_of("m");
  };
  memory_only.get_or_compile(key, compile);
  memory_only.get_or_compile(key, compile);
  CHECK(compiles == 1);
  CHECK(memory_only.entry_path(key).empty());

  const char* old = std::getenv("TILEDSL_CACHE_DIR");
  std::string saved = old ? old : "";
  setenv("TILEDSL_CACHE_DIR", "/some/where", 1);
  CHECK(KernelCache::default_dir() == fs::path("/some/where"));
  unsetenv("TILEDSL_CACHE_DIR");
  if (const char* home = std::getenv("HOME"); home && *home)
    CHECK(KernelCache::default_dir() == fs::path(home) / ".cache" / "tiledsl");
  if (old) setenv("TILEDSL_CACHE_DIR", saved.c_str(), 1);
}

TEST_CASE("a GPU device's cached binary round-trips and rejects damage", "[cache]") {
  using tl::runtime::decode_cached_binary;
  tl::runtime::CachedBinary e{"softmax", 512, 4096, {0x7f, 'E', 'L', 'F', 0, 1, 2, '\n', '\n', 3}};
  auto bytes = tl::runtime::encode_cached_binary("cuda", e);
  auto back = decode_cached_binary("cuda", bytes);
  REQUIRE(back);
  CHECK(back->entry == "softmax");
  CHECK(back->threads == 512);
  CHECK(back->shared_bytes == 4096);
  CHECK(back->binary == e.binary);  // binary bytes may hold "\n\n" themselves
  // Another device's entry, a damaged header and a cut-off header are
  // refused, saying why.
  std::string why;
  CHECK(!decode_cached_binary("hip", bytes, &why));
  CHECK(why == "not a hip kernel entry");
  auto with = [&](std::string head) {
    Bytes b(head.begin(), head.end());
    b.push_back(0x7f);
    return b;
  };
  struct Bad {
    std::string head, why;
  };
  std::vector<Bad> bad = {
      {"tiledsl-cuda-kernel 1\nentry softmax\nthreads 5x2\nshared 0\n\n", "thread count"},
      {"tiledsl-cuda-kernel 1\nentry softmax\nthreads 0\nshared 0\n\n", "thread count"},
      {"tiledsl-cuda-kernel 1\nentry softmax\nthreads 2048\nshared 0\n\n", "thread count"},
      {"tiledsl-cuda-kernel 1\nentry softmax\nthreads 0128\nshared 0\n\n", "thread count"},
      {"tiledsl-cuda-kernel 1\nentry softmax\nthreads 99999999999\nshared 0\n\n", "thread count"},
      {"tiledsl-cuda-kernel 1\nentry softmax\nthreads 128\nshared -5\n\n", "shared-memory size"},
      {"tiledsl-cuda-kernel 1\nentry soft max\nthreads 128\nshared 0\n\n", "entry symbol"},
      {"tiledsl-cuda-kernel 1\nentry \nthreads 128\nshared 0\n\n", "entry symbol"},
      {std::string("tiledsl-cuda-kernel 1\nentry soft\0max\nthreads 128\nshared 0\n\n", 59), "entry symbol"},
      {"tiledsl-cuda-kernel 1\nthreads 128\nentry softmax\nshared 0\n\n", "entry symbol"},
      {"tiledsl-cuda-kernel 1\nentry softmax\nthreads 128\n\n", "shared-memory size"},
      {"tiledsl-cuda-kernel 1\nentry softmax\nthreads 128\nshared 0\nextra 1\n\n", "no empty line"},
      {"tiledsl-cuda-kernel 2\nentry softmax\nthreads 128\nshared 0\n\n", "not a cuda kernel entry"},
  };
  for (const auto& b : bad) {
    INFO(b.head);
    CHECK(!decode_cached_binary("cuda", with(b.head), &why));
    CHECK_THAT(why, Catch::Contains(b.why));
  }
  // Cut anywhere before the binary's first byte: refused.
  for (size_t n = 0; n + e.binary.size() < bytes.size() + 1; ++n) {
    INFO("cut to " << n << " bytes");
    CHECK(!decode_cached_binary("cuda", std::span<const uint8_t>(bytes.data(), n)));
  }
}

// ---------------------------------------------------------------------------
// Faults the on-disk cache must survive (issue 11, section 4): each gives the
// right bytes (recompiled) or a clear message, never a wrong kernel, a hang
// or a crash.

namespace {

// Ends the test binary if a test case hangs (what a FIFO entry did), so a
// regression fails the run instead of stalling it.
struct Watchdog {
  std::mutex m;
  std::condition_variable cv;
  bool done = false;
  std::thread t;
  explicit Watchdog(const char* what, int seconds = 60) {
    t = std::thread([this, what, seconds] {
      std::unique_lock lock(m);
      if (!cv.wait_for(lock, std::chrono::seconds(seconds), [&] { return done; })) {
        std::fprintf(stderr, "test hung for %d s: %s\n", seconds, what);
        std::_Exit(3);
      }
    });
  }
  ~Watchdog() {
    {
      std::lock_guard lock(m);
      done = true;
    }
    cv.notify_all();
    t.join();
  }
};

// What this process writes to stderr while it lives (the cache's warning).
struct CaptureStderr {
  fs::path file;
  int saved = -1;
  explicit CaptureStderr(fs::path f) : file(std::move(f)) {
    std::fflush(stderr);
    saved = dup(2);
    int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 2);
    ::close(fd);
  }
  std::string text() {
    std::fflush(stderr);
    Bytes b = read_file(file);
    return std::string(b.begin(), b.end());
  }
  ~CaptureStderr() {
    std::fflush(stderr);
    dup2(saved, 2);
    ::close(saved);
  }
};

int count_occurrences(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + 1)) ++n;
  return n;
}

int count_entries(const fs::path& dir) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".tlk") ++n;
  return n;
}

// Asks `cache` for `key` and expects one compile giving `good`.
void expect_recompiled(KernelCache& cache, const CacheKey& key, const Bytes& good) {
  int compiles = 0;
  auto out = cache.get_or_compile(key, [&] {
    ++compiles;
    return good;
  });
  CHECK(*out == good);
  CHECK(compiles == 1);
}

// A device payload whose binary is `tag` repeated, as a GPU device caches it.
tl::runtime::CachedBinary binary_of(std::string_view tag) {
  tl::runtime::CachedBinary e{"kernel_entry", 128, 0, {}};
  for (int i = 0; i < 64; ++i) e.binary.insert(e.binary.end(), tag.begin(), tag.end());
  return e;
}

}  // namespace

TEST_CASE("kernel cache: garbage, foreign and oversized entries are recompiled", "[cache]") {
  TempDir tmp;
  CacheKey key = test_key();
  Bytes good = bytes_of("the real binary");
  fs::path path = KernelCache(tmp.path).entry_path(key);
  Bytes garbage(4096);
  for (size_t i = 0; i < garbage.size(); ++i) garbage[i] = uint8_t((i * 2654435761u) >> 13);
  Bytes foreign_key = KernelCache::encode_entry(test_key("another kernel"), good);
  Bytes future = KernelCache::encode_entry(key, good);
  future[8] = 2;  // a later format version
  Bytes oversized = KernelCache::encode_entry(key, good);
  for (int i = 0; i < 8; ++i) oversized[16 + size_t(i)] = 0xff;  // declares 2^64 - 1 bytes
  struct Case {
    const char* what;
    Bytes file;
    const char* why;
  };
  std::vector<Case> cases = {
      {"garbage", garbage, "no TLKCACHE magic"},
      {"an entry of another key under this name", foreign_key, "another key"},
      {"a later format version", future, "format version 2"},
      {"a length over the maximum", oversized, "over the maximum"},
  };
  for (const auto& c : cases) {
    INFO(c.what);
    std::string why;
    CHECK(!KernelCache::decode_entry(key, c.file, &why));
    CHECK_THAT(why, Catch::Contains(c.why));
    write_file(path, c.file);
    KernelCache cache(tmp.path);
    expect_recompiled(cache, key, good);
    CHECK(cache.stats().corrupt_entries == 1);
    CHECK(KernelCache::decode_entry(key, read_file(path)) == good);
  }
}

TEST_CASE("kernel cache: a well-formed entry whose payload is malformed is recompiled", "[cache]") {
  // The entry passes every check of the file format (its checksum is
  // right), but the payload is not a device's kernel: before, every process
  // failed on it with "malformed (delete the cache)"; now it is a miss.
  TempDir tmp;
  CacheKey key = test_key();
  auto good = binary_of("cubin");
  fs::path path = KernelCache(tmp.path).entry_path(key);
  struct Case {
    const char* what;
    Bytes payload;
  };
  auto hip_entry = tl::runtime::encode_cached_binary("hip", good);
  auto no_threads = binary_of("cubin");
  no_threads.threads = 0;
  std::vector<Case> cases = {
      {"text that is no device entry", bytes_of("garbage payload")},
      {"another device's entry", hip_entry},
      {"an entry with 0 threads", tl::runtime::encode_cached_binary("cuda", no_threads)},
      {"an empty payload", {}},
  };
  for (const auto& c : cases) {
    INFO(c.what);
    write_file(path, KernelCache::encode_entry(key, c.payload));
    KernelCache cache(tmp.path);
    bool compiled = false;
    int compiles = 0;
    auto e = tl::runtime::get_or_compile_binary(
        cache, "cuda", key,
        [&] {
          ++compiles;
          return good;
        },
        &compiled);
    CHECK(compiled);
    CHECK(compiles == 1);
    CHECK(e.entry == good.entry);
    CHECK(e.binary == good.binary);
    CHECK(cache.stats().corrupt_entries == 1);
    // The valid entry replaced it: the next process reads it from disk.
    KernelCache next(tmp.path);
    auto again = tl::runtime::get_or_compile_binary(
        next, "cuda", key, [&]() -> tl::runtime::CachedBinary { throw tl::Error("must not compile"); }, &compiled);
    CHECK(!compiled);
    CHECK(again.binary == good.binary);
    CHECK(next.stats().disk_hits == 1);
  }

  // A payload that passed every check but that a driver refused: evict()
  // forgets it in memory and on disk, and the next call recompiles.
  KernelCache cache(tmp.path);
  bool compiled = true;
  tl::runtime::get_or_compile_binary(cache, "cuda", key, [&] { return good; }, &compiled);
  CHECK(!compiled);
  cache.evict(key);
  CHECK(!fs::exists(path));
  tl::runtime::get_or_compile_binary(cache, "cuda", key, [&] { return good; }, &compiled);
  CHECK(compiled);
  CHECK(fs::exists(path));
}

TEST_CASE("kernel cache: an entry that is a FIFO, a link or a directory", "[cache]") {
  // Before: open() of a FIFO blocked forever waiting for a writer, and a link
  // to /dev/zero was read to the end that never comes.
  Watchdog watchdog("an entry that is not a regular file");
  TempDir tmp;
  CacheKey key = test_key();
  Bytes good = bytes_of("the real binary");
  fs::path path = KernelCache(tmp.path).entry_path(key);
  Bytes valid_file = KernelCache::encode_entry(key, good);
  write_file(tmp.path / "elsewhere.tlk", valid_file);

  struct Case {
    const char* what;
    std::function<void()> make;
  };
  std::vector<Case> cases = {
      {"a FIFO", [&] { REQUIRE(mkfifo(path.c_str(), 0644) == 0); }},
      {"a symbolic link to /dev/zero", [&] { fs::create_symlink("/dev/zero", path); }},
      {"a symbolic link to a valid entry elsewhere", [&] { fs::create_symlink(tmp.path / "elsewhere.tlk", path); }},
      {"a dangling symbolic link", [&] { fs::create_symlink(tmp.path / "nothing", path); }},
      {"an empty directory", [&] { fs::create_directory(path); }},
  };
  for (const auto& c : cases) {
    INFO(c.what);
    std::error_code ec;
    fs::remove(path, ec);
    c.make();
    KernelCache cache(tmp.path);
    expect_recompiled(cache, key, good);
    CHECK(cache.stats().corrupt_entries == 1);
    CHECK(cache.write_warning().empty());
    // Removed (a link itself, not its target) and replaced by a real entry.
    CHECK(fs::is_regular_file(fs::symlink_status(path)));
    CHECK(read_file(path) == valid_file);
    CHECK(read_file(tmp.path / "elsewhere.tlk") == valid_file);
  }

  // A directory that is not empty cannot be removed or renamed over: the
  // kernel is compiled and kept in memory, and the cache says why once.
  fs::remove(path);
  fs::create_directories(path / "something");
  CaptureStderr err(tmp.path / "stderr.txt");
  KernelCache cache(tmp.path);
  expect_recompiled(cache, key, good);
  CHECK(cache.get_or_compile(key, [&]() -> Bytes { throw tl::Error("must not compile"); })->size() == good.size());
  CHECK(cache.stats().disk_write_failures == 1);
  CHECK_THAT(cache.write_warning(), Catch::Contains(tmp.path.string()) && Catch::Contains("Is a directory"));
  CHECK(count_occurrences(err.text(), "tiledsl: warning: kernel cache folder") == 1);
  CHECK(count_temporaries(tmp.path) == 0);
}

TEST_CASE("kernel cache: a huge file is rejected from its header", "[cache]") {
  // Sparse files of 16 GiB cost no disk. Before, the reader read the whole
  // file into memory before looking at it.
  Watchdog watchdog("a huge cache entry");
  TempDir tmp;
  CacheKey key = test_key();
  Bytes good = bytes_of("the real binary");
  fs::path path = KernelCache(tmp.path).entry_path(key);
  const off_t huge = off_t(16) << 30;
  auto make = [&](Bytes head) {
    write_file(path, head);
    REQUIRE(truncate(path.c_str(), huge) == 0);
  };
  Bytes declares_all = KernelCache::encode_entry(key, good);
  for (int i = 0; i < 8; ++i) declares_all[16 + size_t(i)] = uint8_t(uint64_t(huge - 88) >> (8 * i));
  struct Case {
    const char* what;
    Bytes head;
  };
  std::vector<Case> cases = {
      {"garbage", bytes_of("this is not a cache entry, and 16 GiB of it follow")},
      {"a valid header declaring the whole file", declares_all},
      {"a valid header declaring a small payload", KernelCache::encode_entry(key, good)},
  };
  for (const auto& c : cases) {
    INFO(c.what);
    make(c.head);
    auto t0 = std::chrono::steady_clock::now();
    KernelCache cache(tmp.path);
    expect_recompiled(cache, key, good);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    CHECK(s < 2.0);  // reading 16 GiB takes far longer (and that much memory)
    CHECK(cache.stats().corrupt_entries == 1);
    CHECK(fs::file_size(path) == 88 + good.size());
  }
}

namespace {

// Compiles three keys through `cache`; returns the warning text printed.
void compile_three(KernelCache& cache, int* compiles) {
  for (int i = 0; i < 3; ++i) {
    Bytes want = bytes_of("binary " + std::to_string(i));
    auto got = cache.get_or_compile(test_key("kernel" + std::to_string(i)), [&] {
      ++*compiles;
      return want;
    });
    CHECK(*got == want);
  }
  // In memory now: asking again compiles nothing.
  for (int i = 0; i < 3; ++i)
    cache.get_or_compile(test_key("kernel" + std::to_string(i)), [&] {
      ++*compiles;
      return Bytes{};
    });
}

}  // namespace

TEST_CASE("kernel cache: an unusable directory is said once, and kernels still compile", "[cache]") {
  // Before: every write failure was silent, so each process recompiled every
  // kernel and nobody learned why.
  TempDir tmp;
  write_file(tmp.path / "a file", bytes_of("not a directory"));
  struct Case {
    const char* what;
    fs::path dir;
    const char* why;
  };
  std::vector<Case> cases = {
      {"the path is a file", tmp.path / "a file", "it is not a directory"},
      {"a missing directory that cannot be created", tmp.path / "a file" / "cache", "cannot create it"},
  };
  for (const auto& c : cases) {
    INFO(c.what);
    CaptureStderr err(tmp.path / "stderr.txt");
    KernelCache cache(c.dir);
    int compiles = 0;
    compile_three(cache, &compiles);
    CHECK(compiles == 3);
    CHECK(cache.stats().disk_write_failures == 3);
    std::string text = err.text();
    CHECK(count_occurrences(text, "tiledsl: warning: kernel cache folder " + c.dir.string() + ": " + c.why) == 1);
    CHECK(count_occurrences(text, "TILEDSL_CACHE_DIR") == 1);
  }

  // A missing directory that can be created is created.
  KernelCache created(tmp.path / "new" / "cache");
  int compiles = 0;
  compile_three(created, &compiles);
  CHECK(compiles == 3);
  CHECK(created.write_warning().empty());
  CHECK(count_entries(tmp.path / "new" / "cache") == 3);
}

TEST_CASE("kernel cache: a read-only directory is said once, and kernels still compile", "[cache]") {
  // Root may write anywhere, so the check runs in a child that is not root
  // (nobody, when the tests run as root).
  TempDir tmp;
  fs::path dir = tmp.path / "readonly";
  fs::create_directory(dir);
  fs::permissions(tmp.path, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                fs::perms::others_read | fs::perms::others_exec);
  fs::permissions(dir, fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read |
                           fs::perms::group_exec | fs::perms::others_read | fs::perms::others_exec);
  fs::path err_file = tmp.path / "stderr.txt";
  write_file(err_file, {});
  fs::permissions(err_file, fs::perms::all);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    // Child: no Catch2 here; the exit code says what failed.
    if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0)) _exit(10);
    int fd = ::open(err_file.c_str(), O_WRONLY | O_TRUNC);
    if (fd < 0) _exit(11);
    dup2(fd, 2);
    KernelCache cache(dir);
    int compiles = 0;
    for (int round = 0; round < 2; ++round)
      for (int i = 0; i < 3; ++i) {
        Bytes want = bytes_of("binary " + std::to_string(i));
        auto got = cache.get_or_compile(test_key("kernel" + std::to_string(i)), [&] {
          ++compiles;
          return want;
        });
        if (*got != want) _exit(12);
      }
    if (compiles != 3) _exit(13);
    if (cache.stats().disk_write_failures != 3) _exit(14);
    _exit(0);
  }
  int status = -1;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  Bytes b = read_file(err_file);
  std::string text(b.begin(), b.end());
  CHECK(count_occurrences(text, "tiledsl: warning: kernel cache folder " + dir.string() +
                                    ": cannot create a file in it: Permission denied") == 1);
  CHECK(count_entries(dir) == 0);
  CHECK(count_temporaries(dir) == 0);
}

namespace {

// Writes half of what it is asked, then fails as a full disk does.
long write_then_enospc(int fd, const void* data, size_t bytes) {
  static thread_local bool wrote_half = false;
  if (!wrote_half && bytes > 1) {
    wrote_half = true;
    return long(::write(fd, data, bytes / 2));
  }
  wrote_half = false;
  errno = ENOSPC;
  return -1;
}

}  // namespace

TEST_CASE("kernel cache: a full disk leaves no partial file, and kernels still compile", "[cache]") {
  TempDir tmp;
  CaptureStderr err(tmp.path / "stderr.txt");
  fs::path dir = tmp.path / "cache";
  KernelCache cache(dir);
  cache.set_write_function(write_then_enospc);
  int compiles = 0;
  compile_three(cache, &compiles);
  CHECK(compiles == 3);
  CHECK(cache.stats().disk_write_failures == 3);
  CHECK(count_entries(dir) == 0);
  CHECK(count_temporaries(dir) == 0);  // the half-written temporaries were removed
  CHECK(count_occurrences(err.text(), "tiledsl: warning: kernel cache folder " + dir.string() +
                                          ": writing an entry failed: No space left on device") == 1);

  // Space again: the next kernel is saved.
  cache.set_write_function(nullptr);
  cache.put(test_key("later"), bytes_of("saved"));
  CHECK(count_entries(dir) == 1);
  CHECK(KernelCache(dir).get(test_key("later")) == bytes_of("saved"));

  // The kernel's own limit on file size (RLIMIT_FSIZE) makes a real write
  // stop part way, as a full disk does: in a child, since the limit is
  // process-wide.
  fs::path dir2 = tmp.path / "limited";
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    signal(SIGXFSZ, SIG_IGN);
    rlimit limit{4096, 4096};
    if (setrlimit(RLIMIT_FSIZE, &limit) != 0) _exit(10);
    int fd = ::open((tmp.path / "child-stderr.txt").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 2);
    KernelCache limited(dir2);
    Bytes big(64 << 10, 0x5a);
    auto got = limited.get_or_compile(test_key(), [&] { return big; });
    if (*got != big) _exit(11);
    if (limited.stats().disk_write_failures != 1) _exit(12);
    _exit(0);
  }
  int status = -1;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  Bytes child_err = read_file(tmp.path / "child-stderr.txt");
  CHECK_THAT(std::string(child_err.begin(), child_err.end()), Catch::Contains("File too large"));
  CHECK(count_entries(dir2) == 0);
  CHECK(count_temporaries(dir2) == 0);
}

TEST_CASE("kernel cache: 8 processes compiling the same kernels into one empty directory", "[cache]") {
  // Real kernels (PTX for sm_90a through the device payload, as the CUDA
  // device caches them), compiled by 8 processes released at once. (No
  // watchdog thread here: forking a process with threads is what
  // ThreadSanitizer warns of; a child that hangs is ended by its alarm.)
  TempDir tmp;
  fs::path dir = tmp.path / "cache";
  std::vector<tl::Kernel> kernels = {tl::compile(scale_kernel<64>, {.name = "scale"}),
                                     tl::compile(scale_kernel<128>, {.name = "scale"}),
                                     tl::compile(scale_kernel<64>, {.name = "scale", .num_warps = 8})};
  std::vector<CacheKey> keys;
  std::vector<tl::runtime::CachedBinary> want;
  tl::codegen::Specialization spec;
  spec.args = {tl::codegen::pointer_arg_facts(256), tl::codegen::int_arg_facts(4096)};
  auto compile = [&](const tl::Kernel& k) {
    auto ck = tl::codegen::compile(*k.impl(), spec, "sm_90a");
    return tl::runtime::CachedBinary{ck.entry, ck.threads, ck.shared_bytes, Bytes(ck.assembly.begin(), ck.assembly.end())};
  };
  for (const auto& k : kernels) {
    keys.push_back(tl::runtime::kernel_cache_key(*k.impl(), spec.key(), "sm_90a"));
    want.push_back(compile(k));
  }
  // Three different kernels, one name: three different binaries.
  REQUIRE(want[0].binary != want[1].binary);
  REQUIRE(want[0].binary != want[2].binary);

  constexpr int kProcesses = 8;
  int go[2];
  REQUIRE(pipe(go) == 0);
  std::vector<pid_t> children;
  for (int p = 0; p < kProcesses; ++p) {
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      alarm(120);
      ::close(go[1]);
      char c;
      if (::read(go[0], &c, 1) != 0) _exit(10);  // released when the parent closes its end
      KernelCache cache(dir);
      // Each process in its own order, so that they meet on every key.
      for (size_t j = 0; j < keys.size(); ++j) {
        size_t i = (j + size_t(p)) % keys.size();
        auto got = tl::runtime::get_or_compile_binary(cache, "cuda", keys[i], [&] { return compile(kernels[i]); });
        if (got.binary != want[i].binary || got.entry != want[i].entry || got.threads != want[i].threads) _exit(11);
      }
      if (cache.stats().corrupt_entries != 0) _exit(12);
      if (cache.stats().disk_write_failures != 0) _exit(13);
      _exit(0);
    }
    children.push_back(pid);
  }
  ::close(go[0]);
  ::close(go[1]);
  for (pid_t pid : children) {
    int status = -1;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }
  CHECK(count_entries(dir) == 3);
  CHECK(count_temporaries(dir) == 0);
  KernelCache cache(dir);
  for (size_t i = 0; i < keys.size(); ++i) {
    bool compiled = true;
    auto got = tl::runtime::get_or_compile_binary(
        cache, "cuda", keys[i], [&]() -> tl::runtime::CachedBinary { throw tl::Error("must not compile"); },
        &compiled);
    CHECK(!compiled);
    CHECK(got.binary == want[i].binary);
  }
}

// ---------------------------------------------------------------------------
// Two kernels that share a name (different IR or options) never reuse each
// other's binaries.

namespace {

template <int FACTOR>
void times_kernel(tl::ptr<float> x, tl::scalar<int32_t> n) {
  auto offs = tl::program_id(0) * 64 + tl::arange(0, 64);  // [64] i32
  auto mask = offs < n;                                    // [64] i1
  tl::store(x + offs, tl::load(x + offs, mask) * float(FACTOR), mask);
}

// Runs each kernel once over x = [1, 2, ..., n] on `dev`; returns the outputs.
std::vector<std::vector<float>> run_each(tl::Device& dev, const std::vector<tl::Kernel>& kernels) {
  const int n = 100;
  std::vector<float> host(n);
  for (int i = 0; i < n; ++i) host[size_t(i)] = float(i + 1);
  std::vector<std::vector<float>> out;
  for (const auto& k : kernels) {
    auto x = dev.upload(host);
    dev(k, tl::Grid{2}, x, n);
    dev.synchronize();
    out.push_back(x.download<float>());
  }
  return out;
}

std::vector<tl::Kernel> twins() {
  // (Factors 3 and 5: LLVM turns a multiply by 2 into an add.)
  return {tl::compile(times_kernel<3>, {.name = "twin"}), tl::compile(times_kernel<5>, {.name = "twin"}),
          tl::compile(times_kernel<3>, {.name = "twin", .num_warps = 8})};
}

}  // namespace

TEST_CASE("kernels sharing a name run their own code on the interpreter", "[cache]") {
  auto dev = tl::Device::get("interp");
  auto out = run_each(dev, twins());
  for (int i = 0; i < 100; ++i) {
    CHECK(out[0][size_t(i)] == 3.0f * float(i + 1));
    CHECK(out[1][size_t(i)] == 5.0f * float(i + 1));
    CHECK(out[2][size_t(i)] == 3.0f * float(i + 1));
  }
}

TEST_CASE("the inspector prints every kernel sharing a name", "[cache]") {
  // Before: it remembered printed kernels by name and specialization, so
  // the second and third "twin" were never shown.
  TempDir tmp;
  auto dev = tl::Device::inspector("sm_90a", "asm");
  std::string text;
  {
    std::fflush(stdout);
    std::cout.flush();
    int saved = dup(1);
    int fd = ::open((tmp.path / "stdout.txt").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 1);
    ::close(fd);
    auto kernels = twins();
    run_each(dev, kernels);
    run_each(dev, kernels);  // the same kernels again: printed once each
    std::cout.flush();
    std::fflush(stdout);
    dup2(saved, 1);
    ::close(saved);
    Bytes b = read_file(tmp.path / "stdout.txt");
    text.assign(b.begin(), b.end());
  }
  CHECK(count_occurrences(text, "// kernel 'twin' for sm_90a") == 3);
  CHECK(count_occurrences(text, "// end of kernel 'twin'") == 3);
  // Each with its own code: the factor as a PTX float constant, and the
  // block size of num_warps.
  std::vector<std::string> parts;
  for (size_t pos = text.find("// kernel 'twin'"); pos != std::string::npos;) {
    size_t next = text.find("// kernel 'twin'", pos + 1);
    parts.push_back(text.substr(pos, next == std::string::npos ? std::string::npos : next - pos));
    pos = next;
  }
  REQUIRE(parts.size() == 3);
  CHECK_THAT(parts[0], Catch::Contains("0f40400000") && !Catch::Contains("0f40A00000"));  // 3.0f
  CHECK_THAT(parts[1], Catch::Contains("0f40A00000") && !Catch::Contains("0f40400000"));  // 5.0f
  CHECK_THAT(parts[0], Catch::Contains(".maxntid 128"));
  CHECK_THAT(parts[2], Catch::Contains(".maxntid 256"));
}

TEST_CASE("kernel cache: the fuzzer's seed entries", "[cache]") {
  // Real entries as the CUDA and HIP devices write them, and two the reader
  // must refuse: the seeds of fuzz/fuzz_cache_entry.cpp. With
  // TILEDSL_FUZZ_SEEDS_DIR set, they are written there (from the top folder:
  // TILEDSL_FUZZ_SEEDS_DIR=fuzz/seeds/fuzz_cache_entry build/tests/tiledsl_tests
  // "kernel cache: the fuzzer's seed entries").
  tl::Kernel k = tl::compile(scale_kernel<64>, {.name = "scale"});
  tl::codegen::Specialization spec;
  spec.args = {tl::codegen::pointer_arg_facts(256), tl::codegen::int_arg_facts(4096)};
  auto entry = [&](std::string_view device, const std::string& target) {
    auto ck = tl::codegen::compile(*k.impl(), spec, target);
    // PTX is what the CUDA device links; AMD's code object is the binary.
    Bytes binary = ck.binary.empty() ? Bytes(ck.assembly.begin(), ck.assembly.end()) : ck.binary;
    auto payload = tl::runtime::encode_cached_binary(device, {ck.entry, ck.threads, ck.shared_bytes, binary});
    return KernelCache::encode_entry(tl::runtime::kernel_cache_key(*k.impl(), spec.key(), target), payload);
  };
  struct Seed {
    std::string name;
    Bytes file;
    bool valid;
  };
  Bytes cuda = entry("cuda", "sm_90a");
  Bytes hip = entry("hip", "gfx942");
  Bytes small = KernelCache::encode_entry(test_key(), tl::runtime::encode_cached_binary("cuda", binary_of("x")));
  std::vector<Seed> seeds = {
      {"cuda-sm_90a.tlk", cuda, true},
      {"hip-gfx942.tlk", hip, true},
      {"cuda-small.tlk", small, true},
      {"empty-payload.tlk", KernelCache::encode_entry(test_key(), {}), false},
      {"truncated.tlk", Bytes(small.begin(), small.end() - 7), false},
  };
  for (const auto& s : seeds) {
    INFO(s.name);
    CHECK(s.file.size() < 65536);  // fuzz/run-fuzz.sh's -max_len
    std::string_view device = s.name.starts_with("hip") ? "hip" : "cuda";
    CHECK(tl::runtime::read_entry_bytes(device, s.file).has_value() == s.valid);
  }
  if (const char* dir = std::getenv("TILEDSL_FUZZ_SEEDS_DIR"); dir && *dir) {
    fs::create_directories(dir);
    for (const auto& s : seeds) write_file(fs::path(dir) / s.name, s.file);
  }
}

namespace {

bool have_cuda() {
  auto names = tl::Device::available();
  if (std::find(names.begin(), names.end(), "cuda") != names.end()) return true;
  WARN("[SKIP] no GPU");
  return false;
}

}  // namespace

TEST_CASE("cuda: kernels sharing a name run their own code", "[gpu]") {
  if (!have_cuda()) return;
  auto dev = tl::Device::get("cuda");
  auto out = run_each(dev, twins());
  for (int i = 0; i < 100; ++i) {
    REQUIRE(out[0][size_t(i)] == 3.0f * float(i + 1));
    REQUIRE(out[1][size_t(i)] == 5.0f * float(i + 1));
    REQUIRE(out[2][size_t(i)] == 3.0f * float(i + 1));
  }
}

TEST_CASE("cuda: a cached entry the device cannot use is recompiled", "[gpu][bad-image]") {
  // The process-wide cache's entry of a real launch, replaced by (a) a
  // payload that is no CUDA entry and (b) a well-formed CUDA entry whose
  // cubin the driver refuses. Before, each failed every later process
  // ("malformed", or cuModuleLoadDataEx's error); now a fresh device (as a
  // new process would have) recompiles and runs the right kernel.
  if (!have_cuda()) return;
  auto& global = KernelCache::global();
  if (global.dir().empty()) {
    WARN("[SKIP] no kernel cache directory");
    return;
  }
  tl::Kernel k = tl::compile(times_kernel<7>, {.name = "recompiled"});
  const int n = 100;
  std::vector<float> host(n);
  for (int i = 0; i < n; ++i) host[size_t(i)] = float(i + 1);
  // A device of its own each time, so that its loaded-module map is empty.
  auto fresh_device = [] {
    for (const auto& e : tl::detail::builtin_gpu_devices())
      if (e.name == "cuda") return tl::Device(e.create());
    FAIL("no cuda device entry");
    return tl::Device();
  };
  auto launch = [&](tl::Device& dev, std::string* key_path) {
    auto x = dev.upload(host);
    dev(k, tl::Grid{2}, x, n);
    dev.synchronize();
    if (key_path) {
      tl::codegen::Specialization spec;
      spec.args = {tl::codegen::pointer_arg_facts(x.impl()->address), tl::codegen::int_arg_facts(n)};
      for (const auto& t : tl::codegen::available_targets()) {
        auto path = global.entry_path(tl::runtime::kernel_cache_key(*k.impl(), spec.key(), t));
        if (fs::exists(path)) *key_path = path.string();
      }
    }
    return x.download<float>();
  };
  auto expect_right = [&](const std::vector<float>& got) {
    for (int i = 0; i < n; ++i) REQUIRE(got[size_t(i)] == 7.0f * float(i + 1));
  };
  std::string path;
  {
    auto dev = fresh_device();
    expect_right(launch(dev, &path));
  }
  REQUIRE(!path.empty());
  CacheKey key;
  {
    Bytes file = read_file(path);
    REQUIRE(file.size() > 88);
    std::memcpy(key.digest.data(), file.data() + 56, 32);
  }
  auto good = tl::runtime::read_entry_bytes("cuda", read_file(path));
  REQUIRE(good);
  auto refused = *good;
  refused.binary.assign(4096, 0xab);  // no cubin
  std::vector<std::pair<const char*, Bytes>> cases = {
      {"no CUDA entry", bytes_of("garbage payload")},
      {"a cubin the driver refuses", tl::runtime::encode_cached_binary("cuda", refused)},
  };
  for (const auto& [what, payload] : cases) {
    INFO(what);
    write_file(path, KernelCache::encode_entry(key, payload));
    global.clear_memory();
    auto dev = fresh_device();
    expect_right(launch(dev, nullptr));
    CHECK(dev.compile_stats().compiles == 1);
    // The entry on disk is valid again.
    auto again = tl::runtime::read_entry_bytes("cuda", read_file(path));
    REQUIRE(again);
    CHECK(again->entry == good->entry);
    CHECK(again->binary != refused.binary);
  }
}
