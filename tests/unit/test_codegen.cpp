// GPU code generation without a GPU: kernels traced with the front end are
// compiled for NVIDIA targets; the PTX must show the instructions the
// performance model expects (16-byte vector accesses, shuffles for
// reductions, no local-memory spills) and assemble with ptxas when the CUDA
// toolkit is present.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <regex>
#include <sstream>

#include <unistd.h>

#include "codegen_checks.h"
#include "codegen/compile.h"
#include "codegen/pipeline.h"
#include "codegen/target_info.h"
#include "runtime/kernel.h"
#include "runtime/kernel_cache.h"
#include "tiledsl/tiledsl.h"

using namespace tl;
using namespace codegen_checks;

namespace {

template <int BLOCK>
void vector_add(ptr<float> x, ptr<float> y, ptr<float> out, scalar<int32_t> n) {
  auto offs = program_id(0) * BLOCK + arange(0, BLOCK);  // [BLOCK] i32
  auto mask = offs < n;
  store(out + offs, load(x + offs, mask) + load(y + offs, mask), mask);
}

// vector_add with memory hints on every access.
void hinted_add(ptr<float> x, ptr<float> y, ptr<float> out, scalar<int32_t> n) {
  auto offs = program_id(0) * 256 + arange(0, 256);  // [256] i32
  auto mask = offs < n;
  auto a = load(x + offs, mask, LoadOptions{.cache = ".cg"});
  auto b = load(y + offs, mask, LoadOptions{.evict = "evict_first"});
  store(out + offs, a + b, mask, StoreOptions{.evict = "evict_last"});
}

void bad_hint(ptr<float> x, ptr<float> out) {
  store(out + arange(0, 32), load(x + arange(0, 32), LoadOptions{.cache = ".wb"}));
}

template <int BLOCK>
void softmax(ptr<bf16> out, ptr<bf16> in, scalar<int32_t> stride, scalar<int32_t> n) {
  auto row = program_id(0);
  auto cols = arange(0, BLOCK);  // [BLOCK] i32
  auto mask = cols < n;
  auto x = cast<float>(load(in + row * stride + cols, mask, -INFINITY));  // [BLOCK] f32
  auto e = exp(x - max(x, 0));
  store(out + row * stride + cols, cast<bf16>(e / sum(e, 0)), mask);
}

// A loop with a carried 2-D accumulator, a column reduction and a scan.
void row_stats(ptr<float> out, ptr<float> in, scalar<int32_t> rows) {
  auto r = arange(0, 32);   // [32]
  auto c = arange(0, 64);   // [64]
  auto acc = zeros<float>({32, 64});
  for (auto k : range(0, rows, 32)) {
    auto offs = col(r + k) * 64 + row(c);  // [32, 64]
    acc = acc + load(in + offs, col(r + k) < rows, 0.0f);
  }
  store(out + c, sum(acc, 0));               // [64]
  store(out + 64 + r, cumsum(max(acc, 1), 0));  // [32]
}

// A loop that accumulates a converted load and advances a pointer tile:
// both carried values must stay in the load's layout (no shared memory; the
// bf16 store after the loop uses the same layout).
void carried_sum(ptr<bf16> out, ptr<bf16> in, scalar<int32_t> n) {
  auto acc = zeros<float>({1024});        // [1024] f32
  auto p = in + arange(0, 1024);          // [1024] ptr<bf16>
  for (auto i : range(0, n, 1024)) {
    acc = acc + cast<float>(load(p));
    p += 1024;
  }
  store(out + arange(0, 1024), cast<bf16>(acc));
}

// A masked select beside a masked load and store: with n divisible by 16
// the mask is constant over each thread's 4-element vectors.
template <int BLOCK>
void masked_select(ptr<float> out, ptr<float> in, scalar<int32_t> n) {
  auto offs = program_id(0) * BLOCK + arange(0, BLOCK);  // [BLOCK] i32
  auto mask = offs < n;                                  // [BLOCK] i1
  auto x = load(in + offs, mask, 0.0f);                  // [BLOCK] f32
  store(out + offs, where(mask, x * 2.0f, 1.0f), mask);
}

// A multiply feeding an add, and an explicit fma.
void mul_add(ptr<float> out, ptr<float> a, ptr<float> b) {
  auto offs = arange(0, 128);  // [128] i32
  auto x = load(a + offs), y = load(b + offs);
  store(out + offs, x * y + x);
  store(out + 128 + offs, fma(x, y, y));
}

// 2^x of 128 floats, and x + a subnormal constant.
void exp2_add(ptr<float> out, ptr<float> a) {
  auto offs = arange(0, 128);  // [128] i32
  auto x = load(a + offs);     // [128] f32
  store(out + offs, exp2(x));
  store(out + 128 + offs, x * 0.5f + 1e-39f);
}

// A bf16 row scaled by f32 weights: 16-byte accesses would put 8 bf16 but
// 4 f32 in a thread.
void scale_row(ptr<bf16> out, ptr<bf16> in, ptr<float> w) {
  auto cols = arange(0, 1024);                                          // [1024] i32
  auto x = cast<float>(load(in + program_id(0) * 1024 + cols));         // [1024] f32
  store(out + program_id(0) * 1024 + cols, cast<bf16>(x * load(w + cols)));
}

// A helper applied twice in place (Triton's test_call): the second load must
// read what the first store wrote.
void twice_in_place(ptr<float> x, scalar<int32_t> n) {
  auto offs = program_id(0) * 256 + arange(0, 256);  // [256] i32
  auto mask = offs < n;
  store(x + offs, load(x + offs, mask) * 3.0f, mask);
  store(x + offs, load(x + offs, mask) * 3.0f, mask);
}

// Argmax down the columns of a [16, 32] bf16 tile: an index and a 16-bit
// value reduced together.
void column_argmax(ptr<int32_t> out, ptr<bf16> in) {
  auto r = arange(0, 16), c = arange(0, 32);
  auto x = load(in + col(r) * 32 + row(c));  // [16, 32] bf16
  store(out + c, argmax(x, 0));              // [32] i32
}

// Interleaving two tiles by join and reshape, feeding an f32 dot.
void joined_dot(ptr<float> out, ptr<float> a_ptr, ptr<float> b_ptr) {
  auto r = arange(0, 16), c = arange(0, 8), n = arange(0, 16);
  auto x = load(a_ptr + col(r) * 8 + row(c));                       // [16, 8]
  auto a = reshape(join(x, x * 2.0f), {16, 16});                     // [16, 16]
  auto b = load(b_ptr + col(n) * 16 + row(n));                      // [16, 16]
  store(out + col(r) * 16 + row(n), dot(a, b));
}

// Splitting a [2] tile into two scalars.
void split_pair(ptr<int64_t> out, ptr<int64_t> in) {
  auto [lo, hi] = split(load(in + arange(0, 2)));  // two [] i64
  store(out, lo + hi * 10);
}

// Joining two scalars into a [2] tile.
void join_pair(ptr<int64_t> out, ptr<int64_t> in) {
  store(out + arange(0, 2), join(load(in), load(in + 1)) * 3);  // [2] i64
}

// A loop that loads and stores a [4, 64] f64 tile and carries nothing (the
// pipeline planner asked a store for its result: std::out_of_range).
void copy_in_loop(ptr<double> out, ptr<double> in, scalar<int32_t> trips) {
  auto offs = col(arange(0, 4)) * 64 + row(arange(0, 64));  // [4, 64] i32
  for (auto i : range(0, trips)) store(out + i * 256 + offs, load(in + i * 256 + offs));
}

// A [4, 1] tile carried through two loops, the second loading in its body
// (the loop result's registers did not match its layout: SIGSEGV in
// smem_store).
void carried_twice(ptr<float> out, ptr<float> in, scalar<int32_t> n, scalar<int32_t> m, scalar<int32_t> trips) {
  auto r = arange(0, 4), c = arange(0, 1);
  auto offs = program_id(0) * 4 + col(r) + row(c);                    // [4, 1] i32
  auto x0 = load(in + offs + 512, (col(r) < n) & (row(c) < m), -8.0f);  // [4, 1] f32
  auto x = x0;
  for (auto i : range(0, 2)) x = clamp(-minimum(x0, x), -0.5f, 1.5f);
  for (auto i : range(0, trips)) x = clamp(load(in + offs + i * 4 + 512) * x, -32.0f, 32.0f);
  store(out + offs + 24, x);
}

// Casts to narrow floats from f64 and integers (rounded once, through a
// round-to-odd f32).
void wide_to_narrow(ptr<bf16> out, ptr<f8e4m3> out8, ptr<double> x, ptr<int64_t> i, ptr<uint32_t> j) {
  auto k = arange(0, 128);  // [128] i32
  store(out + k, cast<bf16>(load(x + k)) + cast<bf16>(load(i + k)) + cast<bf16>(load(j + k)));
  store(out8 + k, cast<f8e4m3>(load(x + k)));
  store(out8 + 128 + k, cast<f8e4m3>(load(i + k)));
}

// A long scan: each thread holds its part of the axis (2048 f64 over 128
// threads: 16 registers), not the whole line.
void long_cumsum(ptr<double> out, ptr<double> in) {
  auto offs = arange(0, 2048);  // [2048] i32
  store(out + offs, cumsum(load(in + offs), 0, true));
}

// Pointer tiles reordered through shared memory (flip, cat, interleave:
// the buffer held pointers, which the GPU IR refused), and one-element
// tiles squeezed to scalars (reshape to []: no layout for the scalar).
void shuffled_ptrs(ptr<float> out, ptr<float> x) {
  auto o = arange(0, 16);                                        // [16] i32
  store(out + o, load(flip(x + o, 0)));                          // x reversed
  store(out + 16 + arange(0, 32), load(cat(x + o, x + 16 + o, 0)));
  store(out + 48 + arange(0, 32), load(interleave(x + o, x + 16 + o)));
  auto one = load(x + arange(0, 1));                             // [1] f32
  store(out + 80, reshape(one, {}) + reshape(reshape(load(x + 1), {1, 1}) * 2.0f, {}));
}

}  // namespace

TEST_CASE("argmax of bf16, join/reshape into a dot, split to and join of scalars, loops found by the random kernels, shuffled pointer tiles and squeezes to scalars compile for every target", "[codegen]") {
  Kernel argmax_k = compile(column_argmax, {.name = "column_argmax"});
  Kernel dot_k = compile(joined_dot, {.name = "joined_dot"});
  Kernel split_k = compile(split_pair, {.name = "split_pair"});
  Kernel join_k = compile(join_pair, {.name = "join_pair"});
  Kernel copy_k = compile(copy_in_loop, {.name = "copy_in_loop"});
  Kernel carried_k = compile(carried_twice, {.name = "carried_twice"});
  Kernel narrow_k = compile(wide_to_narrow, {.name = "wide_to_narrow"});
  Kernel ptrs_k = compile(shuffled_ptrs, {.name = "shuffled_ptrs"});
  for (std::string arch : {"sm_80", "sm_90a", "gfx90a", "gfx942", "gfx1100"}) {
    for (const Kernel* k : {&argmax_k, &dot_k, &split_k, &join_k, &copy_k, &carried_k, &narrow_k, &ptrs_k}) {
      INFO(arch << " " << k->name());
      auto spec = aligned(*k);
      if (k == &carried_k)  // as the random kernel had them: n 9, m 57, trips 4
        for (auto [i, v] : {std::pair{2, 9}, {3, 57}, {4, 4}}) spec.args[size_t(i)] = codegen::int_arg_facts(v);
      auto ck = codegen::compile(*k->impl(), spec, arch);
      if (arch.starts_with("sm_")) check_assembles(ck.assembly, arch);
    }
  }
}

TEST_CASE("a load after a store to the same addresses reads memory again", "[codegen]") {
  Kernel k = compile(twice_in_place, {.name = "twice_in_place"});
  for (std::string arch : {"sm_80", "sm_90a"}) {
    std::string ptx = codegen::compile(*k.impl(), aligned(k), arch).assembly;
    INFO(arch);
    // One 16-byte access a thread per load and store, and two multiplies.
    CHECK(count(ptx, R"(ld\.global\.v4\.b32)") == 2);
    CHECK(count(ptx, R"(st\.global\.v4\.b32)") == 2);
    CHECK(count(ptx, R"(mul(\.rn)?\.f32)") == 8);
    // The order in the PTX is load, store, load, store.
    std::regex access(R"((ld|st)\.global)");
    std::string order;
    for (auto it = std::sregex_iterator(ptx.begin(), ptx.end(), access); it != std::sregex_iterator(); ++it)
      order += (*it)[1].str()[0];
    CHECK(order == "lsls");
    check_assembles(ptx, arch);
  }
}

TEST_CASE("vector_add compiles to 16-byte vector accesses", "[codegen]") {
  Kernel k = compile(vector_add<1024>, {.name = "vector_add"});
  for (std::string arch : {"sm_80", "sm_90a"}) {
    auto ck = codegen::compile(*k.impl(), aligned(k), arch);
    CHECK(ck.threads == 128);
    CHECK(ck.assembly.find(".target " + arch) != std::string::npos);
    CHECK(count(ck.assembly, R"(ld\.global\.v4\.b32)") == 4);  // two loads, two repeats each
    CHECK(count(ck.assembly, R"(st\.global\.v4\.b32)") == 2);
    check_assembles(ck.assembly, arch);
  }
}

TEST_CASE("without alignment facts the accesses stay scalar", "[codegen]") {
  Kernel k = compile(vector_add<1024>, {.name = "vector_add"});
  codegen::Specialization none;
  auto ck = codegen::compile(*k.impl(), none, "sm_90a");
  CHECK(count(ck.assembly, R"(ld\.global\.v4)") == 0);
  CHECK(count(ck.assembly, R"(ld\.global\.b32)") == 16);
}

TEST_CASE("softmax reduces with shuffles and one exchange between warps", "[codegen]") {
  Kernel k = compile(softmax<1024>, {.name = "softmax"});
  auto ck = codegen::compile(*k.impl(), aligned(k), "sm_90a");
  // Per reduction: 5 shuffles over the lane bits, then 2 that combine the
  // partials of the 4 warps.
  CHECK(count(ck.assembly, R"(shfl\.sync\.bfly\.b32)") == 14);
  CHECK(count(ck.assembly, R"(ld\.global\.v4\.b32)") == 1);      // 8 bf16 per thread
  CHECK(count(ck.assembly, R"(ex2\.approx)") == 8);
  CHECK(ck.shared_bytes > 0);
  check_assembles(ck.assembly, "sm_90a");
  check_assembles(codegen::compile(*k.impl(), aligned(k), "sm_80").assembly, "sm_80");
}

TEST_CASE("loops, 2-D reductions and scans lower and assemble", "[codegen]") {
  Kernel k = compile(row_stats, {.name = "row_stats"});
  auto ck = codegen::compile(*k.impl(), aligned(k), "sm_90a");
  CHECK(ck.assembly.find("bar.sync") != std::string::npos);
  check_assembles(ck.assembly, "sm_90a");
}

TEST_CASE("a long scan is split over the threads, not repeated in each", "[codegen]") {
  Kernel k = compile(long_cumsum, {.name = "long_cumsum"});
  for (std::string arch : {"sm_80", "sm_90a"}) {
    INFO(arch);
    std::string ptx = codegen::compile(*k.impl(), aligned(k), arch).assembly;
    // One add a register and level of the thread's part, not 2047 a thread.
    CHECK(count(ptx, R"(add(\.rn)?\.f64)") < 160);
    CHECK(count(ptx, R"(shfl\.sync)") > 0);
    if (auto run = run_ptxas(ptx, arch)) {
      CHECK(run->ok);
      CHECK(run->log.find(" 0 bytes spill stores") != std::string::npos);
    }
  }
}

TEST_CASE("TILEDSL_DUMP_KERNEL keeps the dumps of the kernels it names", "[codegen]") {
  auto dir = std::filesystem::temp_directory_path() / ("tiledsl-dump-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  ::setenv("TILEDSL_DUMP", "tile,asm", 1);
  ::setenv("TILEDSL_DUMP_DIR", dir.c_str(), 1);
  ::setenv("TILEDSL_DUMP_KERNEL", "dumped", 1);
  Kernel a = compile(vector_add<256>, {.name = "dumped"});
  Kernel b = compile(vector_add<256>, {.name = "not_dumped"});
  codegen::compile(*a.impl(), aligned(a), "sm_90a");
  codegen::compile(*b.impl(), aligned(b), "sm_90a");
  ::unsetenv("TILEDSL_DUMP");
  ::unsetenv("TILEDSL_DUMP_DIR");
  ::unsetenv("TILEDSL_DUMP_KERNEL");
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) files.push_back(e.path().filename().string());
  std::sort(files.begin(), files.end());
  CHECK(files == std::vector<std::string>{"dumped.sm_90a.asm", "dumped.sm_90a.tile"});
  std::filesystem::remove_all(dir);
}

TEST_CASE("a TILEDSL_DUMP_DIR that cannot be written sends the dump to stderr; the compile goes on", "[codegen]") {
  auto file = std::filesystem::temp_directory_path() / ("tiledsl-dump-file-" + std::to_string(::getpid()));
  std::ofstream(file) << "a file, not a folder";
  ::setenv("TILEDSL_DUMP", "tile,bogus,after-asign-layouts,after-assign-layouts", 1);
  ::setenv("TILEDSL_DUMP_DIR", (file / "sub").c_str(), 1);
  Kernel a = compile(vector_add<256>, {.name = "dumped"});
  std::ostringstream err;
  auto* old = std::cerr.rdbuf(err.rdbuf());
  std::string ptx;
  CHECK_NOTHROW(ptx = codegen::compile(*a.impl(), aligned(a), "sm_90a").assembly);
  std::cerr.rdbuf(old);
  ::unsetenv("TILEDSL_DUMP");
  ::unsetenv("TILEDSL_DUMP_DIR");
  std::filesystem::remove(file);
  CHECK(!ptx.empty());
  CHECK_THAT(err.str(), Catch::Contains("tiledsl: TILEDSL_DUMP_DIR: cannot write ") &&
                            Catch::Contains("; the dump follows here") && Catch::Contains("func @dumped(") &&
                            Catch::Contains("tiledsl: TILEDSL_DUMP: unknown item 'bogus'") &&
                            Catch::Contains("tiledsl: TILEDSL_DUMP: unknown item 'after-asign-layouts' (after-<pass> takes "
                                            "one of lower-descriptors, ") &&
                            !Catch::Contains("unknown item 'after-assign-layouts'"));
}

// A's block through a map of its arguments, B's through a stride the
// kernel adds up (no tensor copy: the launcher cannot compute it).
void notes_dot(ptr<bf16> a, ptr<bf16> b, ptr<float> c, scalar<int32_t> K, scalar<int32_t> ld) {
  auto ta = make_tensor_descriptor(a, {64, K}, {ld, 1}, {64, 64}).load({0, 0});       // [64, 64]
  auto tb = make_tensor_descriptor(b, {K, 64}, {ld + 64, 1}, {64, 64}).load({0, 0});  // [64, 64]
  store(c + col(arange(0, 64)) * 64 + row(arange(0, 64)), dot(ta, tb));
}

TEST_CASE("TILEDSL_DUMP=notes says which descriptor blocks became tensor copies, and why not", "[codegen][descriptor]") {
  auto dir = std::filesystem::temp_directory_path() / ("tiledsl-dump-notes-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  ::setenv("TILEDSL_DUMP", "notes", 1);
  ::setenv("TILEDSL_DUMP_DIR", dir.c_str(), 1);
  Kernel k = compile(notes_dot, {.name = "notes_dot"});
  codegen::compile(*k.impl(), aligned(k), "sm_90a");
  codegen::compile(*k.impl(), aligned(k), "sm_80");  // no tensor copies there: no notes
  ::unsetenv("TILEDSL_DUMP");
  ::unsetenv("TILEDSL_DUMP_DIR");
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) files.push_back(e.path().filename().string());
  CHECK(files == std::vector<std::string>{"notes_dot.sm_90a.notes"});
  std::ifstream in(dir / "notes_dot.sm_90a.notes");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK_THAT(text, Catch::Contains("test_codegen.cpp:") && Catch::Contains(": descriptor_load: a tensor copy\n"));
  CHECK_THAT(text, Catch::Contains(": descriptor_load: the masked load, not a tensor copy: a stride the kernel computes "
                                   "other than as a product of arguments and constants"));
  CHECK(std::count(text.begin(), text.end(), '\n') == 2);
  std::filesystem::remove_all(dir);
}

TEST_CASE("TILEDSL_DUMP=after-all prints the IR after each GPU pass", "[codegen]") {
  auto dir = std::filesystem::temp_directory_path() / ("tiledsl-dump-passes-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  ::setenv("TILEDSL_DUMP", "after-all", 1);
  ::setenv("TILEDSL_DUMP_DIR", dir.c_str(), 1);
  Kernel k = compile(vector_add<256>, {.name = "passes"});
  codegen::compile(*k.impl(), aligned(k), "sm_90a");
  ::unsetenv("TILEDSL_DUMP");
  ::unsetenv("TILEDSL_DUMP_DIR");
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) files.push_back(e.path().filename().string());
  std::vector<std::string> want;
  for (const auto& p : codegen::gpu_passes())
    if (p.on_by_default) want.push_back("passes.sm_90a.after-" + std::string(p.name));
  std::sort(files.begin(), files.end());
  std::sort(want.begin(), want.end());
  CHECK(files == want);  // the passes that ran only: not the stages
  std::ifstream in(dir / "passes.sm_90a.after-assign-layouts");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(text.find("tile<256xf32, #l1>") != std::string::npos);
  std::filesystem::remove_all(dir);
}

// The inspector's compile (emit_stage: how a machine without a GPU sees
// what a kernel becomes) dumps the stages it goes through, as a GPU
// compile does: TILEDSL_DUMP=tile,gpu,llvm,asm printed nothing there.
TEST_CASE("TILEDSL_DUMP prints the stages an inspector's compile goes through", "[codegen]") {
  auto dir = std::filesystem::temp_directory_path() / ("tiledsl-dump-emit-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  Kernel k = compile(vector_add<256>, {.name = "emitted"});
  {
    ScopedEnv dump("TILEDSL_DUMP", "tile,gpu,llvm,asm"), to("TILEDSL_DUMP_DIR", dir.c_str());
    codegen::emit_stage(*k.impl(), aligned(k), "sm_90a", codegen::Stage::Gpu);
    CHECK(std::filesystem::exists(dir / "emitted.sm_90a.tile"));
    CHECK(std::filesystem::exists(dir / "emitted.sm_90a.gpu"));
    CHECK_FALSE(std::filesystem::exists(dir / "emitted.sm_90a.llvm"));  // not lowered for the gpu stage
    std::string ptx = codegen::emit_stage(*k.impl(), aligned(k), "sm_90a", codegen::Stage::Asm);
    CHECK(std::filesystem::exists(dir / "emitted.sm_90a.llvm"));
    std::ifstream in(dir / "emitted.sm_90a.asm");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    CHECK(text == ptx);
  }
  std::filesystem::remove_all(dir);
}

// TILEDSL_GPU_PASSES switches optional GPU passes off (-name) or on
// (+name, those off by default), is part of the kernel cache key, and
// names the optional passes when an item is not one of them.
TEST_CASE("TILEDSL_GPU_PASSES changes which optional GPU passes run, and the cache key", "[codegen]") {
  auto dir = std::filesystem::temp_directory_path() / ("tiledsl-gpu-passes-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  Kernel k = compile(vector_add<256>, {.name = "passes"});
  const auto plain_key = runtime::kernel_cache_key(*k.impl(), "s", "sm_90a");
  {
    ScopedEnv dump("TILEDSL_DUMP", "after-all"), to("TILEDSL_DUMP_DIR", dir.c_str());
    ScopedEnv passes("TILEDSL_GPU_PASSES", "-prefetch-tile-copies,,+peel-last-iteration");
    codegen::compile(*k.impl(), aligned(k), "sm_90a");
    CHECK(runtime::kernel_cache_key(*k.impl(), "s", "sm_90a") != plain_key);
  }
  CHECK(runtime::kernel_cache_key(*k.impl(), "s", "sm_90a") == plain_key);
  CHECK(std::filesystem::exists(dir / "passes.sm_90a.after-peel-last-iteration"));
  CHECK_FALSE(std::filesystem::exists(dir / "passes.sm_90a.after-prefetch-tile-copies"));
  CHECK(std::filesystem::exists(dir / "passes.sm_90a.after-allocate-shared"));
  std::filesystem::remove_all(dir);
  for (const char* bad : {"assign-layouts", "-assign-layouts", "+no-such-pass", "-", "peel-last-iteration"}) {
    INFO(bad);
    ScopedEnv passes("TILEDSL_GPU_PASSES", bad);
    try {
      codegen::compile(*k.impl(), aligned(k), "sm_90a");
      FAIL("expected an error");
    } catch (const Error& e) {
      std::string what = e.what();
      CHECK(what.find("TILEDSL_GPU_PASSES: expected -name or +name of an optional GPU pass (overlap-dots, ") == 0);
      CHECK(what.find("peel-last-iteration") != std::string::npos);
      CHECK(what.find(std::string("found '") + bad + "'") != std::string::npos);
    }
  }
}

TEST_CASE("every stage of the pipeline prints", "[codegen]") {
  Kernel k = compile(vector_add<256>, {.name = "vector_add"});
  auto spec = aligned(k);
  using codegen::Stage;
  std::string tile = codegen::emit_stage(*k.impl(), spec, "sm_90a", Stage::Tile);
  CHECK(tile.find("func @vector_add") == 0);
  // The GPU IR: a layout table above the function, launch attributes, and
  // a layout on every tile type.
  std::string gpu = codegen::emit_stage(*k.impl(), spec, "sm_90a", Stage::Gpu);
  CHECK(gpu.find("#l1 = {register: [") == 0);
  CHECK(gpu.find("func @vector_add(") != std::string::npos);
  CHECK(gpu.find("attributes {barriers = \"inserted\", fp_fusion = 1, num_ctas = 1, num_stages = 3, num_warps = 4, warp_size = 32}") !=
        std::string::npos);
  CHECK(gpu.find("tile<256xf32, #l1>") != std::string::npos);
  CHECK(gpu.find("xf32>") == std::string::npos);  // no tile without a layout
  CHECK(codegen::emit_stage(*k.impl(), spec, "gfx942", Stage::Gpu).find("warp_size = 64") != std::string::npos);
  // The GPU stage rewrites its own copy: the kernel's Tile IR is unchanged.
  CHECK(codegen::emit_stage(*k.impl(), spec, "sm_90a", Stage::Tile) == tile);
  CHECK(codegen::emit_stage(*k.impl(), spec, "sm_90a", Stage::Llvm).find("define ptx_kernel void @vector_add") !=
        std::string::npos);
  CHECK(codegen::emit_stage(*k.impl(), spec, "sm_80", Stage::Asm).find(".target sm_80") != std::string::npos);
}

TEST_CASE("unknown targets and unlowered ops are clear errors", "[codegen]") {
  Kernel k = compile(vector_add<256>, {.name = "vector_add"});
  CHECK_THROWS_WITH(codegen::compile(*k.impl(), {}, "sm_12"), Catch::Contains("unknown target 'sm_12'") &&
                                                                 Catch::Contains("sm_90a"));
}

TEST_CASE("loop-carried values keep the layout of the loads that feed them", "[codegen]") {
  // Unpipelined, so that any shared memory or barrier would be a layout
  // conversion.
  Kernel k = compile(carried_sum, {.name = "carried_sum", .num_stages = 1});
  auto ck = codegen::compile(*k.impl(), aligned(k), "sm_90a");
  CHECK(ck.shared_bytes == 0);
  CHECK(count(ck.assembly, R"(bar\.sync)") == 0);
  CHECK(count(ck.assembly, R"(ld\.global\.v4\.b32)") == 1);  // 8 bf16 per thread, in the loop
  check_assembles(ck.assembly, "sm_90a");
}

TEST_CASE("memory ops whose values meet share one per-thread vector", "[codegen]") {
  // One layout for all three accesses: 8 elements a thread, the weights as
  // two 16-byte loads; no conversion through shared memory between them.
  Kernel k = compile(scale_row, {.name = "scale_row"});
  auto ck = codegen::compile(*k.impl(), aligned(k), "sm_90a");
  CHECK(ck.shared_bytes == 0);
  CHECK(count(ck.assembly, R"(bar\.sync)") == 0);
  CHECK(count(ck.assembly, R"(ld\.global\.v4\.b32)") == 3);  // x once, w twice
  CHECK(count(ck.assembly, R"(st\.global\.v4\.b32)") == 1);
  check_assembles(ck.assembly, "sm_90a");
}

TEST_CASE("cache and eviction hints reach the PTX; unknown ones are errors", "[codegen]") {
  Kernel k = compile(hinted_add, {.name = "hinted_add"});
  std::string ptx = codegen::emit_stage(*k.impl(), aligned(k), "sm_90a", codegen::Stage::Asm);
  CHECK(count(ptx, R"(ld\.global\.cg\.v4\.b32)") > 0);
  CHECK(count(ptx, R"(ld\.global\.L1::evict_first\.v4\.b32)") > 0);
  CHECK(count(ptx, R"(st\.global\.L1::evict_last\.v4\.b32)") > 0);
  check_assembles(ptx, "sm_90a");
  // ".wb" is a store's cache operator, not a load's.
  CHECK_THROWS_WITH(compile(bad_hint, {.name = "bad_hint"}), Catch::Contains("test_codegen.cpp") &&
                                                                 Catch::Contains("cache") && Catch::Contains(".cg"));
}

TEST_CASE("a mask constant over vectors is compared once a vector", "[codegen]") {
  // 1024 f32 on 128 threads: two 16-byte vectors a thread. Axis analysis
  // proves `offs < n` constant over each (n divisible by 16), so the select
  // uses the same two compares as the load and store, not eight.
  Kernel k = compile(masked_select<1024>, {.name = "masked_select"});
  auto ck = codegen::compile(*k.impl(), aligned(k), "sm_90a");
  CHECK(count(ck.assembly, R"(setp\.[a-z]+\.s32)") == 2);
  CHECK(count(ck.assembly, R"(selp\.[bf]32)") == 8);
  check_assembles(ck.assembly, "sm_90a");
  // Without the divisibility fact each element is compared (and the
  // accesses are scalar).
  auto scalar = codegen::compile(*k.impl(), codegen::Specialization{}, "sm_90a");
  CHECK(count(scalar.assembly, R"(setp\.[a-z]+\.s32)") == 8);
}

TEST_CASE("multiplies feed adds as fused multiply-adds unless fp_fusion is off", "[codegen]") {
  Kernel fused = compile(mul_add, {.name = "mul_add"});
  std::string ptx = codegen::compile(*fused.impl(), aligned(fused), "sm_90a").assembly;
  CHECK(count(ptx, R"(fma\.rn\.f32)") == 8);  // 4 elements a thread, twice
  CHECK(count(ptx, R"(mul\.rn\.f32|add\.rn\.f32)") == 0);
  Kernel unfused = compile(mul_add, {.name = "mul_add", .fp_fusion = false});
  std::string uptx = codegen::compile(*unfused.impl(), aligned(unfused), "sm_90a").assembly;
  CHECK(count(uptx, R"(fma\.rn\.f32)") == 4);  // the explicit fma only
  CHECK(count(uptx, R"(mul\.rn\.f32)") == 4);
  CHECK(count(uptx, R"(add\.rn\.f32)") == 4);
}

TEST_CASE("flush_denormals gives f32 operations their flushing forms", "[codegen]") {
  // Without the option exp2 is ex2.approx.f32 (ptxas adds a range check
  // and two multiplies to keep subnormal results) and nothing flushes.
  Kernel keep = compile(exp2_add, {.name = "exp2_add"});
  std::string ptx = codegen::compile(*keep.impl(), aligned(keep), "sm_90a").assembly;
  CHECK(count(ptx, R"(ex2\.approx\.f32)") == 4);
  CHECK(count(ptx, R"(\.ftz\.)") == 0);
  // With it, ex2.approx.ftz.f32 and the flushing fma; the GPU IR records it.
  Kernel flush = compile(exp2_add, {.name = "exp2_add", .flush_denormals = true});
  auto c = codegen::compile(*flush.impl(), aligned(flush), "sm_90a");
  CHECK(count(c.assembly, R"(ex2\.approx\.ftz\.f32)") == 4);
  CHECK(count(c.assembly, R"(fma\.rn\.ftz\.f32)") == 4);
  CHECK(count(c.assembly, R"(ex2\.approx\.f32)") == 0);
  check_assembles(c.assembly, "sm_90a");
  std::string gpu = codegen::emit_stage(*flush.impl(), aligned(flush), "sm_90a", codegen::Stage::Gpu);
  CHECK(gpu.find("flush_denormals = 1") != std::string::npos);
  CHECK(codegen::emit_stage(*keep.impl(), aligned(keep), "sm_90a", codegen::Stage::Gpu).find("flush_denormals") ==
        std::string::npos);
  // AMD: the function's f32 denormal mode.
  auto amd = codegen::compile(*flush.impl(), aligned(flush), "gfx942");
  CHECK(!amd.assembly.empty());
}

// programs_per_sm: a thread's registers capped at its share of the
// register file with that many programs a multiprocessor (65536 / (4 x
// 128) = 128; shared memory: test_gpu_descriptors.cpp); AMD: an error.
TEST_CASE("programs_per_sm caps registers at a program's share", "[codegen]") {
  Kernel one = compile(exp2_add, {.name = "exp2_add"});
  CHECK(codegen::compile(*one.impl(), aligned(one), "sm_90a").assembly.find(".maxnreg") == std::string::npos);
  const int four_line = __LINE__ + 1;
  Kernel four = compile(exp2_add, {.name = "exp2_add", .programs_per_sm = 4});
  auto c = codegen::compile(*four.impl(), aligned(four), "sm_90a");
  CHECK(count(c.assembly, R"(\.maxnreg 128)") == 1);
  check_assembles(c.assembly, "sm_90a");
  CHECK(codegen::emit_stage(*four.impl(), aligned(four), "sm_90a", codegen::Stage::Gpu).find("programs_per_sm = 4") !=
        std::string::npos);
  const std::string at = std::string(__FILE__) + ":" + std::to_string(four_line) + ": kernel 'exp2_add': ";
  CHECK_THROWS_WITH(codegen::compile(*four.impl(), aligned(four), "gfx942"),
                    at + "programs_per_sm = 4 is not supported on gfx942 yet (NVIDIA targets only: expected "
                         "programs_per_sm = 1)");
  // So is a cluster where the target has none, or not so large.
  const int pair_line = __LINE__ + 1;
  Kernel pair = compile(exp2_add, {.name = "exp2_add", .num_ctas = 2});
  const std::string pair_at = std::string(__FILE__) + ":" + std::to_string(pair_line) + ": kernel 'exp2_add': ";
  CHECK_THROWS_WITH(codegen::compile(*pair.impl(), aligned(pair), "sm_80"),
                    pair_at + "num_ctas = 2 needs thread-block clusters of that many CTAs, sm_80 has none (they "
                              "are on sm_90 and later; expected num_ctas = 1 here)");
  CHECK_THROWS_WITH(codegen::compile(*pair.impl(), aligned(pair), "gfx942"),
                    Catch::StartsWith(pair_at + "num_ctas = 2 needs thread-block clusters"));
  // Registers go to warps in fours: a block of 13 warps of 152 registers
  // (65536 / 416) failed its launch on the H100 (CUDA_ERROR_LAUNCH_OUT_OF_
  // RESOURCES); it is charged 16 warps', so 128 a thread.
  const auto& hopper = codegen::get_target_info("sm_90a");
  CHECK(hopper.register_cap(13 * 32) == 128);
  CHECK(hopper.register_cap(16 * 32) == 128);
  CHECK(hopper.register_cap(12 * 32) == 168);
  CHECK(hopper.register_cap(32) == 255 / 8 * 8);
}

TEST_CASE("shared memory is addressed with 32-bit registers", "[codegen]") {
  // Shared addresses fit in 32 bits; 64-bit ones would cost register pairs.
  Kernel k = compile(softmax<1024>, {.name = "softmax"});
  std::string ptx = codegen::compile(*k.impl(), aligned(k), "sm_90a").assembly;
  CHECK(count(ptx, R"([ls]t\.shared[.a-z0-9]*\s+(\{[^}]*\},\s*)?\[%r\d+)") > 0);
  CHECK(count(ptx, R"([ls]t\.shared[.a-z0-9]*\s+(\{[^}]*\},\s*)?\[%rd\d+)") == 0);
}

