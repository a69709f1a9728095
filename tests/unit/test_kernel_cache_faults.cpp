// Kernel cache faults (issue 11, section 4): garbage, foreign, malformed
// and huge entries, entries that are FIFOs, links or directories, unusable
// and read-only directories, a full disk, and 8 processes compiling into
// one empty directory.

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
#include "kernel_cache_test_util.h"
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

using namespace kernel_cache_test;

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
