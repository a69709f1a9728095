// Kernel cache: SHA-256 against the FIPS test vectors, key construction,
// the entry format's checks, memory and disk layers, corrupt entries being
// recompiled, one compile per key across threads, several processes
// writing one key, and the fuzzer's seed entries. The faults of issue 11
// are in test_kernel_cache_faults.cpp, kernels sharing a name in
// test_kernel_cache_names.cpp.

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
#include "kernel_cache_placed_kernels.h"
#include "kernel_cache_test_util.h"
#include "runtime/compiler.h"
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
  // The compiler version is both libraries' build ids (ld --build-id=sha1:
  // 20 bytes each; the runtime's, then the compiler's, which registered
  // itself), the same on every call: the ids of the loaded objects holding
  // the runtime's and the compiler's code. This program links both
  // libraries' objects (tiledsl_internal), so both are its own; in a
  // program linked with the shared libraries they are theirs.
  const std::string& v = tl::runtime::compiler_version();
  INFO(v);
  const std::string runtime = "tiledsl 0.1 runtime build ", compiler = " compiler build ";
  REQUIRE(v.rfind(runtime, 0) == 0);
  REQUIRE(v.size() == runtime.size() + 40 + compiler.size() + 40);
  std::string id1 = v.substr(runtime.size(), 40), id2 = v.substr(v.size() - 40);
  CHECK(v.substr(runtime.size() + 40, compiler.size()) == compiler);
  for (const auto& id : {id1, id2}) CHECK(id.find_first_not_of("0123456789abcdef") == std::string::npos);
  CHECK(tl::runtime::build_identity(reinterpret_cast<const void*>(&tl::runtime::compiler_version)) == "build " + id1);
  CHECK(tl::runtime::build_identity(reinterpret_cast<const void*>(&tl::codegen::compile)) == "build " + id2);
  CHECK(&v == &tl::runtime::compiler_version());
}


TEST_CASE("kernel cache keys leave out source locations but an assert's", "[cache]") {
  auto key = [](const tl::Kernel& k) { return tl::runtime::kernel_cache_key(*k.impl(), "d16", "sm_90a"); };
  tl::Kernel here = tl::compile(placed_kernel<0>, {.name = "placed"});
  tl::Kernel there = tl::compile(placed_kernel<1>, {.name = "placed"});
  CHECK(here.impl()->fn->body.ops.front()->loc.file != there.impl()->fn->body.ops.front()->loc.file);
  CHECK(key(here) == key(there));
  CHECK(key(tl::compile(asserting_kernel<0>, {.name = "a"})) != key(tl::compile(asserting_kernel<1>, {.name = "a"})));
  // programs_per_sm changes the code (registers capped): the key holds it.
  CHECK(key(tl::compile(placed_kernel<0>, {.name = "placed", .programs_per_sm = 2})) != key(here));
}

TEST_CASE("kernel cache: TILEDSL_ALWAYS_COMPILE and TILEDSL_DUMP compile rather than read the disk", "[cache]") {
  TempDir tmp;
  CacheKey key = test_key();
  int compiles = 0;
  auto compile = [&] {
    ++compiles;
    return bytes_of("binary " + std::to_string(compiles));
  };
  KernelCache(tmp.path).get_or_compile(key, compile);
  for (const char* var : {"TILEDSL_ALWAYS_COMPILE", "TILEDSL_DUMP"}) {
    INFO(var);
    ::setenv(var, var == std::string("TILEDSL_DUMP") ? "none" : "1", 1);
    KernelCache cache(tmp.path);
    int before = compiles;
    CHECK(*cache.get_or_compile(key, compile) == bytes_of("binary " + std::to_string(before + 1)));
    CHECK(*cache.get_or_compile(key, compile) == bytes_of("binary " + std::to_string(before + 1)));  // memory
    CHECK(compiles == before + 1);
    ::unsetenv(var);
    // The compile was written: the next process without the variable reads it.
    CHECK(KernelCache(tmp.path).get(key) == bytes_of("binary " + std::to_string(before + 1)));
  }
  ::setenv("TILEDSL_ALWAYS_COMPILE", "0", 1);
  CHECK(!KernelCache::always_compile());
  ::unsetenv("TILEDSL_ALWAYS_COMPILE");
}

TEST_CASE("kernel cache keys of traced kernels", "[cache]") {
  // "The same kernel twice": the same IR and options.
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

TEST_CASE("a cached binary keeps its kernel's tensor maps, and damaged map lines are refused", "[cache]") {
  using tl::runtime::TensorMapParam;
  using Operand = TensorMapParam::Operand;
  auto arg = Operand::argument;
  TensorMapParam a{tl::DType::bf16, 0, {arg(2), arg(3)}, {arg(4), Operand::constant(1)}, {128, 64}, 128};
  TensorMapParam b{tl::DType::f32, 5, {Operand::constant(300)}, {Operand::constant(1)}, {32}, 0};
  // Products: Triton's attention's Z * H * N_CTX rows, a batch stride of H * 8192 * 128.
  TensorMapParam c{tl::DType::bf16, 0, {{1, {1, 2, 3}}, Operand::constant(128)}, {{8192 * 128, {2}}, Operand::constant(1)},
                   {64, 128}, 128};
  CHECK(tl::runtime::tensor_map_line(a) == "bf16 0 2 a2 a3 a4 1 128 64 128");
  CHECK(tl::runtime::tensor_map_line(b) == "f32 5 1 300 1 32 0");
  CHECK(tl::runtime::tensor_map_line(c) == "bf16 0 2 a1*a2*a3 128 1048576*a2 1 64 128 128");
  // Each product as the kernel's i32 multiplication: wrapped to 32 bits.
  CHECK(c.sizes[0].of({0, 4, 32, 4096}) == 4 * 32 * 4096);
  CHECK(c.strides[0].of({0, 0, 32}) == 32 * 1048576);
  CHECK(c.strides[0].of({0, 0, 4096}) == int64_t(int32_t(uint32_t(4096u * 1048576u))));
  CHECK(Operand::constant(int64_t(1) << 40).of({}) == int64_t(1) << 40);
  tl::runtime::CachedBinary e{"gemm", 384, 1024, {1, 2, 3}, {a, b, c}};
  auto back = tl::runtime::decode_cached_binary("cuda", tl::runtime::encode_cached_binary("cuda", e));
  REQUIRE(back);
  CHECK(back->tensor_maps == e.tensor_maps);
  CHECK(back->binary == e.binary);
  for (const char* line : {"bf16 0 2 a2 a3 a4 1 128 64", "bf16 0 2 a2 a3 a4 1 128 64 128 0", "bf16 0 2 a2 a3 a4 1 512 64 128",
                           "bf16 0 2 a2 a3 a4 1 128 64 16", "bf17 0 2 a2 a3 a4 1 128 64 128", "bf16 0 6 a2", "bf16 -1 1 4 1 8 0",
                           "bf16 0 1 a99999 1 8 0", "bf16 0 1 4x 1 8 0", "bf16 0 1  1 8 0", "bf16 0 1 99999999999999999999 1 8 0",
                           "bf16 0 1 a2*4 1 8 0", "bf16 0 1 a2* 1 8 0", "bf16 0 1 *a2 1 8 0", "bf16 0 1 a2**a3 1 8 0",
                           "bf16 0 1 a1*a1*a1*a1*a1*a1*a1*a1*a1 1 8 0"}) {
    INFO(line);
    CHECK(!tl::runtime::parse_tensor_map_line(line));
    std::string head = std::string("tiledsl-cuda-kernel 1\nentry gemm\nthreads 128\nshared 0\nmap ") + line + "\n\n";
    Bytes bytes(head.begin(), head.end());
    bytes.push_back(0x7f);
    std::string why;
    CHECK(!tl::runtime::decode_cached_binary("cuda", bytes, &why));
    CHECK(why == "a damaged tensor map line");
  }
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
