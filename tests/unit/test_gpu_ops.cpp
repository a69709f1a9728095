// [gpu] Every family of operations run on the GPU against the interpreter
// (the oracle), on fresh random inputs with odd sizes and masks. Skipped,
// saying so, where no GPU is present.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <type_traits>

#include "codegen_checks.h"
#include "gpu_oracle.h"
#include "tiledsl/tiledsl.h"

using namespace tl;

namespace {
using namespace gpu_oracle;

constexpr int N = 1000;  // odd size: the last block is masked
constexpr int BLOCK = 256;

// 16 float results of one input pair, each a separate output row.
void float_ops(ptr<float> out, ptr<float> a_ptr, ptr<float> b_ptr, scalar<int32_t> n) {
  auto offs = program_id(0) * BLOCK + arange(0, BLOCK);  // [BLOCK] i32
  auto m = offs < n;
  auto a = load(a_ptr + offs, m, 1.0f);
  auto b = load(b_ptr + offs, m, 1.0f);
  tile<float> r[] = {a + b,       a - b,        a * b,         a / b,       minimum(a, b), maximum(a, b),
                     exp(a),      log(abs(a) + 1.0f), sqrt(abs(a)), rsqrt(abs(a) + 0.5f), sin(a), cos(a),
                     erf(a),      floor(a),     ceil(a),       fma(a, b, a), sigmoid(a),  where(a < b, a, -b),
                     exp2(a),     log2(abs(a) + 1.0f), -a, clamp(a, -1.0f, 1.0f)};
  for (int i = 0; i < int(std::size(r)); ++i) store(out + i * n + offs, r[i], m);
}

void int_ops(ptr<int32_t> out, ptr<int32_t> a_ptr, ptr<int32_t> b_ptr, scalar<int32_t> n) {
  auto offs = program_id(0) * BLOCK + arange(0, BLOCK);
  auto m = offs < n;
  auto a = load(a_ptr + offs, m, 1);
  auto b = load(b_ptr + offs, m, 1);
  auto s = b & 31;
  tile<int32_t> r[] = {a + b, a - b, a * b, a / b, a % b, a & b, a | b, a ^ b, a << s, a >> s,
                       minimum(a, b), maximum(a, b), cast<int32_t>(a < b), where(a == b, a, b),
                       cast<int32_t>(cast<uint8_t>(a)), cast<int32_t>(cast<float>(a) * 1.5f), cast<int32_t>(cast<int8_t>(a))};
  for (int i = 0; i < int(std::size(r)); ++i) store(out + i * n + offs, r[i], m);
}

// 8- and 16-bit integer arithmetic wraps at its own width before its
// result is widened, compared or shifted. (PTX leaves 16-bit arithmetic
// machine-specific: ptxas computes it in 32-bit registers, and neg.s16 of
// -32768 came back +32768 through the cvt.s32.s16 after it; random kernel
// seed 5777 found it.) Every result of a, b in T: itself, widened, < b, >> 1.
template <class T>
void narrow_int_ops(ptr<int32_t> out, ptr<T> raw, ptr<T> a_ptr, ptr<T> b_ptr, scalar<int32_t> n) {
  auto offs = program_id(0) * BLOCK + arange(0, BLOCK);  // [BLOCK] i32
  auto m = offs < n;
  auto a = load(a_ptr + offs, m, T(1));  // [BLOCK] T
  auto b = load(b_ptr + offs, m, T(1));  // [BLOCK] T
  auto one = full<T>({BLOCK}, T(1));
  tile<T> r[] = {-a, a + b, a - b, a * b, a << one, abs(a), T(0) - a};
  for (int i = 0; i < int(std::size(r)); ++i) {
    store(out + (3 * i) * n + offs, cast<int32_t>(r[i]), m);
    store(out + (3 * i + 1) * n + offs, cast<int32_t>(r[i] < b), m);
    store(out + (3 * i + 2) * n + offs, cast<int32_t>(r[i] >> one), m);
    store(raw + i * n + offs, r[i], m);  // the narrow bits themselves
  }
}

// Round trips through the narrow float formats.
void narrow_casts(ptr<float> out, ptr<float> a_ptr, scalar<int32_t> n) {
  auto offs = program_id(0) * BLOCK + arange(0, BLOCK);
  auto m = offs < n;
  auto a = load(a_ptr + offs, m);
  store(out + offs, cast<float>(cast<bf16>(a)), m);
  store(out + n + offs, cast<float>(cast<f16>(a)), m);
  store(out + 2 * n + offs, cast<float>(cast<f8e4m3>(a)), m);
  store(out + 3 * n + offs, cast<float>(cast<f8e5m2>(a)), m);
  store(out + 4 * n + offs, cast<float>(cast<bf16>(a) * cast<bf16>(a)), m);
}

// 2-D reductions along both axes, argmax, scans, shape ops. [32, 64] tile.
void reductions(ptr<float> out, ptr<float> x_ptr, ptr<int32_t> idx) {
  auto r = arange(0, 32), c = arange(0, 64);
  auto x = load(x_ptr + col(r) * 64 + row(c));                 // [32, 64]
  store(out + r, sum(x, 1));                                   // [32]
  store(out + 32 + c, max(x, 0));                              // [64]
  store(out + 96 + r, min(x, 1));
  store(out + 128 + col(c) * 32 + row(r), trans(x));           // [64, 32]
  store(out + 2176 + col(r) * 64 + row(c), cumsum(x, 1));
  store(out + 4224 + col(r) * 64 + row(c), cumprod(x * 0.1f + 1.0f, 0));
  store(idx + r, argmax(x, 1));
  store(idx + 32 + c, argmin(x, 0));
  auto flat = reshape(x, {2048});                              // [2048]
  store(out + 6272 + arange(0, 2048), flat * 2.0f);
}

// A loop with carried tile, scalar and pointer values and an if_ inside.
void loop_if(ptr<float> out, ptr<float> x_ptr, scalar<int32_t> trips) {
  auto acc = zeros<float>({128});
  auto count = full<int32_t>({128}, 0);
  auto p = x_ptr + arange(0, 128);
  for (auto i : range(0, trips)) {
    auto v = load(p);
    if_(i % 3 == 0, [&] { acc = acc + v; }, [&] { acc = acc - v * 0.5f; });
    count = count + 1;
    p += 128;
  }
  store(out + arange(0, 128), acc);
  store(out + 128 + arange(0, 128), cast<float>(count));
}

void atomics(ptr<float> sums, ptr<int32_t> maxes, ptr<float> x_ptr, ptr<int32_t> k_ptr, scalar<int32_t> n) {
  auto offs = program_id(0) * BLOCK + arange(0, BLOCK);
  auto m = offs < n;
  auto k = load(k_ptr + offs, m, 0);  // [BLOCK] in [0, 16)
  atomic_add(sums + k, load(x_ptr + offs, m, 0.0f), m);
  atomic_max(maxes + k, offs, m);
  atomic_min(maxes + 16 + k, offs, m);
}

// Read-modify-reread in place (Triton's test_call): the same addresses are
// loaded, stored, loaded again; then the same in a loop and after an atomic.
void in_place(ptr<float> x, ptr<int32_t> flags, scalar<int32_t> n, scalar<int32_t> trips) {
  auto offs = program_id(0) * BLOCK + arange(0, BLOCK);  // [BLOCK] i32
  auto m = offs < n;
  store(x + offs, load(x + offs, m) * 3.0f, m);
  store(x + offs, load(x + offs, m) * 3.0f, m);
  for (auto i : range(0, trips)) store(x + offs, load(x + offs, m) + 1.0f, m);
  atomic_add(flags + offs, full<int32_t>({BLOCK}, 5), m);
  store(flags + offs, load(flags + offs, m) * 2, m);
}

// The kernels that crashed the GPU compile: argmax of bf16 down columns,
// join/reshape feeding a dot, split of a [2] tile into scalars.
void bf16_argmax(ptr<int32_t> out, ptr<bf16> in) {
  auto r = arange(0, 16), c = arange(0, 32);
  auto x = load(in + col(r) * 32 + row(c));  // [16, 32] bf16
  store(out + c, argmax(x, 0));              // [32]
  store(out + 32 + r, argmin(x, 1));         // [16]
}

void joined_dot(ptr<float> out, ptr<float> x_ptr) {
  auto r = arange(0, 32), c = arange(0, 16);
  auto x = load(x_ptr + col(r) * 16 + row(c));    // [32, 16]
  auto a = reshape(join(x, x * 2.0f), {32, 32});  // [32, 32]: columns x0, 2 x0, x1, 2 x1, ...
  store(out + col(r) * 32 + row(r), dot(a, a));
}

void split_scalars(ptr<int64_t> out, ptr<int64_t> in) {
  auto [lo, hi] = split(load(in + arange(0, 2)));  // two [] i64
  store(out, lo * 1000 + hi);
}

// Pointer tiles reordered through shared memory, and squeezes to scalars.
void shuffled_ptrs(ptr<float> out, ptr<float> x) {
  auto o = arange(0, 16);  // [16] i32
  store(out + o, load(flip(x + o, 0)));
  store(out + 16 + arange(0, 32), load(cat(x + o, x + 16 + o, 0)));
  store(out + 48 + arange(0, 32), load(interleave(x + o, x + 16 + o)));
  store(out + 80, reshape(load(x + arange(0, 1)), {}) + reshape(reshape(load(x + 1), {1, 1}) * 2.0f, {}));
}

// 2^x of 128 floats.
void exp2_of(ptr<float> out, ptr<float> a) {
  auto offs = arange(0, 128);  // [128] i32
  store(out + offs, exp2(load(a + offs)));
}

}  // namespace

TEST_CASE("flush_denormals flushes subnormal exp2 results on the GPU, the interpreter keeps them", "[gpu]") {
  REQUIRE_GPU();
  std::vector<float> x(128);
  for (size_t i = 0; i < x.size(); ++i) x[i] = -120.0f - float(i) * 0.25f;  // 2^-120 .. 2^-151.75
  auto run = [&](Device& d, bool flush) {
    Kernel k = compile(exp2_of, {.name = "exp2_of", .flush_denormals = flush});
    auto in = d.upload(x);
    auto out = d.alloc<float>(x.size());
    d(k, Grid{1}, out, in);
    d.synchronize();
    return out.download<float>();
  };
  Device gpu = Device::get("cuda"), interp = Device::get("interp");
  auto flushed = run(gpu, true), kept = run(gpu, false), ref = run(interp, true);
  for (size_t i = 0; i < x.size(); ++i) {
    INFO("x = " << x[i]);
    float want = std::exp2(x[i]);
    CHECK(ref[i] == Approx(want).epsilon(1e-6).margin(3e-45));  // within an ulp, subnormals kept
    if (x[i] >= -126.0f) {  // normal results: the same either way
      CHECK(flushed[i] == Approx(want).epsilon(1e-5));
      CHECK(kept[i] == Approx(want).epsilon(1e-5));
      continue;
    }
    CHECK(flushed[i] == 0.0f);
    if (x[i] >= -140.0f) CHECK(kept[i] == Approx(want).epsilon(1e-2));  // 9 or more bits left
    if (x[i] >= -148.0f) CHECK(kept[i] > 0.0f);
  }
}

TEST_CASE("bf16 argmax, join/reshape into a dot, split to scalars and shuffled pointer tiles match the interpreter", "[gpu]") {
  REQUIRE_GPU();
  // One launch of k(out, in) on `d`: out's n elements.
  auto once = []<class O>(Device& d, const Kernel& k, const Buffer& in, size_t n, O) {
    auto out = d.alloc<O>(n);
    d(k, Grid{1}, out, in);
    d.synchronize();
    return std::vector<std::vector<O>>{out.template download<O>()};
  };
  Device interp = Device::get("interp");
  auto am = compile(bf16_argmax, {.name = "bf16_argmax"});
  std::vector<float> vals(512);  // distinct values, so the winner is unique
  for (int i = 0; i < 512; ++i) vals[i] = float((i * 37) % 512) - 256.0f;
  const std::vector<bf16> hx(vals.begin(), vals.end());
  same_on_both<int32_t>([&](Device& d) { return once(d, am, d.upload(hx), 48, int32_t()); }, 0, 0);

  auto jd = compile(joined_dot, {.name = "joined_dot"});
  same_on_both<float>([&](Device& d) {
    auto x = d.upload(random<float>(512, -1, 1, 12));
    auto out = d.alloc<float>(1024);
    d(jd, Grid{1}, out, x);
    d.synchronize();
    return std::vector<std::vector<float>>{out.download<float>()};
  }, 1e-4, 1e-4);  // tf32 inputs on both; the f32 sums differ in order only

  auto sp = compile(split_scalars, {.name = "split_scalars"});
  const std::vector<int64_t> pair{7, 42};
  same_on_both<int64_t>([&](Device& d) { return once(d, sp, d.upload(pair), 1, int64_t()); }, 0, 0);
  CHECK(once(interp, sp, interp.upload(pair), 1, int64_t())[0][0] == 7042);

  auto sh = compile(shuffled_ptrs, {.name = "shuffled_ptrs"});
  std::vector<float> x32(32);
  for (int i = 0; i < 32; ++i) x32[size_t(i)] = float(i);
  same_on_both<float>([&](Device& d) { return once(d, sh, d.upload(x32), 81, 0.0f); }, 0, 0);
  auto want = once(interp, sh, interp.upload(x32), 81, 0.0f)[0];
  CHECK(want[0] == 15.0f);
  CHECK(want[49] == 16.0f);  // interleave: x0, x16, x1, ...
  CHECK(want[80] == 2.0f);   // x0 + 2 x1
}

TEST_CASE("loads after stores and atomics to the same addresses see them", "[gpu]") {
  REQUIRE_GPU();
  auto k = compile(in_place, {.name = "in_place"});
  std::vector<int32_t> flags_want, flags_got;
  same_on_both<float>([&](Device& d) {
    auto x = d.upload(random<float>(N, -4, 4, 11));
    auto flags = d.upload(std::vector<int32_t>(N, 1));
    d(k, Grid{uint32_t(cdiv(N, BLOCK))}, x, flags, N, 4);
    d.synchronize();
    (d.name() == "interp" ? flags_want : flags_got) = flags.download<int32_t>();
    return std::vector<std::vector<float>>{x.download<float>()};
  }, 0, 0);
  CHECK(flags_want == flags_got);
}

TEST_CASE("float elementwise ops match the interpreter", "[gpu]") {
  REQUIRE_GPU();
  auto k = compile(float_ops, {.name = "float_ops"});
  same_on_both<float>([&](Device& d) {
    auto a = d.upload(random<float>(N, -4, 4, 1)), b = d.upload(random<float>(N, 0.5f, 4, 2));
    auto out = d.alloc<float>(22 * N);
    d(k, Grid{uint32_t(cdiv(N, BLOCK))}, out, a, b, N);
    d.synchronize();
    return std::vector<std::vector<float>>{out.download<float>()};
  }, 2e-5, 2e-6);  // approximate exp2/lg2/sin/cos/rsqrt units: a few ulps
}

// Float % is fmod: the result has the dividend's sign, a zero result too
// (-3 % 3 is -0). NVPTX expands frem to x - trunc(x / y) * y, which gives
// +0 there; random kernel seed 5738 saw it through a bitcast. The sign is
// compared as bits, on both devices.
template <class T>
void float_rem(ptr<int32_t> out, ptr<T> a_ptr, ptr<T> b_ptr) {
  auto offs = arange(0, 8);  // [8] i32
  using I = std::conditional_t<sizeof(T) == 2, int16_t, std::conditional_t<sizeof(T) == 4, int32_t, int64_t>>;
  auto r = load(a_ptr + offs) % load(b_ptr + offs);  // [8] T
  store(out + offs, cast<int32_t>(bitcast<I>(r) < I(0)));
}

template <class T>
static std::vector<int32_t> rem_signs(Device& d) {
  auto k = compile(float_rem<T>, {.name = "float_rem"});
  auto a = d.upload(std::vector<T>{T(-3), T(3), T(-2.5), T(2.5), T(-0.0), T(0.0), T(-6), T(6)});
  auto b = d.upload(std::vector<T>{T(3), T(-3), T(0.5), T(-0.5), T(1), T(-1), T(-4), T(-4)});
  auto out = d.alloc<int32_t>(8);
  d(k, Grid{1}, out, a, b);
  d.synchronize();
  return out.download<int32_t>();
}

TEST_CASE("float % keeps the dividend's sign (zero included)", "[codegen]") {
  Device interp = Device::get("interp");
  std::vector<int32_t> want = {1, 0, 1, 0, 1, 0, 1, 0};
  CHECK(rem_signs<float>(interp) == want);
  CHECK(rem_signs<f16>(interp) == want);
  CHECK(rem_signs<double>(interp) == want);
  for (const char* t : {"sm_90a", "gfx942"}) {
    auto k = compile(float_rem<float>, {.name = "float_rem"});
    std::string text = codegen::emit_stage(*k.impl(), codegen_checks::aligned(k), t, codegen::Stage::Llvm);
    INFO(t);
    CHECK(codegen_checks::count(text, R"(llvm\.copysign)") >= 1);
  }
  if (gpu_oracle::have_gpu()) {
    Device gpu = Device::get("cuda");
    CHECK(rem_signs<float>(gpu) == want);
    CHECK(rem_signs<f16>(gpu) == want);
    CHECK(rem_signs<double>(gpu) == want);
  }
}

TEST_CASE("integer ops, comparisons and casts match the interpreter", "[gpu]") {
  REQUIRE_GPU();
  auto k = compile(int_ops, {.name = "int_ops"});
  same_on_both<int32_t>([&](Device& d) {
    std::mt19937 rng(3);
    std::uniform_int_distribution<int32_t> big(-100000, 100000), small(1, 1000);
    std::vector<int32_t> ha(N), hb(N);
    for (auto& v : ha) v = big(rng);
    for (auto& v : hb) v = small(rng) * (rng() % 2 ? 1 : -1);
    auto a = d.upload(ha), b = d.upload(hb);
    auto out = d.alloc<int32_t>(17 * N);
    d(k, Grid{uint32_t(cdiv(N, BLOCK))}, out, a, b, N);
    d.synchronize();
    return std::vector<std::vector<int32_t>>{out.download<int32_t>()};
  }, 0, 0);
}

template <class T>
static void check_narrow_int_ops() {
  auto k = compile(narrow_int_ops<T>, {.name = "narrow_int_ops"});
  same_on_both<int32_t>([&](Device& d) {
    using L = std::numeric_limits<T>;
    // The edges of T's range against the small values, then random ones.
    std::vector<T> edge = {L::min(), T(L::min() + 1), T(-1), T(0), T(1), T(2), T(L::max() - 1), L::max()};
    std::vector<T> ha, hb;
    for (T x : edge)
      for (T y : edge) ha.push_back(x), hb.push_back(y);
    std::mt19937 rng(12);
    while (ha.size() < size_t(N)) ha.push_back(T(rng())), hb.push_back(T(rng()));
    auto a = d.upload(ha), b = d.upload(hb);
    auto out = d.alloc<int32_t>(21 * N);
    auto raw = d.alloc<T>(7 * N);
    d(k, Grid{uint32_t(cdiv(N, BLOCK))}, out, raw, a, b, N);
    d.synchronize();
    std::vector<int32_t> bits;
    for (T x : raw.template download<T>()) bits.push_back(int32_t(x));
    return std::vector<std::vector<int32_t>>{out.download<int32_t>(), bits};
  }, 0, 0);
}

// Without a GPU: the PTX holds none of the neg.s16 / abs.s16 that ptxas
// gets wrong at -32768 (see avoid_neg16 in the NVPTX back end), and
// assembles.
TEST_CASE("8- and 16-bit negation and abs avoid neg.s16 and abs.s16 in PTX", "[codegen]") {
  using namespace codegen_checks;
  auto ptx_of = [](const Kernel& k) {
    return codegen::emit_stage(*k.impl(), aligned(k), "sm_90a", codegen::Stage::Asm);
  };
  for (const std::string& ptx : {ptx_of(compile(narrow_int_ops<int16_t>, {.name = "narrow_int_ops"})),
                                 ptx_of(compile(narrow_int_ops<int8_t>, {.name = "narrow_int_ops"}))}) {
    CHECK(count(ptx, R"(neg\.s16|abs\.s16)") == 0);
    CHECK(count(ptx, R"(not\.b16)") >= 2);  // -a and 0 - a
    check_assembles(ptx, "sm_90a");
  }
}

TEST_CASE("8- and 16-bit integer arithmetic wraps at its width on the GPU", "[gpu]") {
  REQUIRE_GPU();
  check_narrow_int_ops<int16_t>();
  check_narrow_int_ops<int8_t>();
  check_narrow_int_ops<uint8_t>();
}

TEST_CASE("narrow float conversions round like the interpreter", "[gpu]") {
  REQUIRE_GPU();
  auto k = compile(narrow_casts, {.name = "narrow_casts"});
  same_on_both<float>([&](Device& d) {
    auto a = d.upload(random<float>(N, -600, 600, 4));
    auto out = d.alloc<float>(5 * N);
    d(k, Grid{uint32_t(cdiv(N, BLOCK))}, out, a, N);
    d.synchronize();
    return std::vector<std::vector<float>>{out.download<float>()};
  }, 0, 0);
}

// Scans in the layouts they meet: a loaded [2048] row (registers, lanes,
// warps and a wrapped register bit along the axis), both axes of a 2-D
// tile, reverse, i32 (exact) and i64 (64-bit shuffles), f32 sums of
// integers (exact in any order).
void scans(ptr<int32_t> out, ptr<int64_t> out64, ptr<float> outf, ptr<int32_t> in) {
  auto i = arange(0, 2048);                       // [2048]
  auto x = load(in + i);                          // [2048] i32
  store(out + i, cumsum(x, 0));
  store(out + 2048 + i, cumsum(x, 0, true));
  auto r = arange(0, 32), c = arange(0, 64);
  auto y = load(in + col(r) * 64 + row(c));       // [32, 64] i32
  store(out + 4096 + col(r) * 64 + row(c), cumsum(y, 0));
  store(out + 6144 + col(r) * 64 + row(c), cumsum(y, 1, true));
  store(out + 8192 + col(r) * 64 + row(c), cumprod(y % 3 + 1, 1));
  auto z = cast<int64_t>(x) * 1000003;            // [2048] i64
  store(out64 + i, cumsum(z, 0, true));
  store(outf + col(r) * 64 + row(c), cumsum(cast<float>(y), 0));
}

TEST_CASE("scans match the interpreter in every layout they meet", "[gpu]") {
  REQUIRE_GPU();
  Kernel k1 = compile(scans, {.name = "scans1", .num_warps = 1});
  Kernel k4 = compile(scans, {.name = "scans4", .num_warps = 4});
  Kernel k8 = compile(scans, {.name = "scans8", .num_warps = 8});
  std::vector<int32_t> x(2048);
  std::mt19937 rng(11);
  for (auto& v : x) v = int32_t(rng() % 201) - 100;
  for (const Kernel* k : {&k1, &k4, &k8}) {
    INFO(k->name());
    std::vector<int32_t> want32, got32;
    std::vector<int64_t> want64, got64;
    std::vector<float> wantf, gotf;
    for (const char* dev : {"interp", "cuda"}) {
      Device d = Device::get(dev);
      auto in = d.upload(x);
      auto o = d.alloc<int32_t>(10240);
      auto o64 = d.alloc<int64_t>(2048);
      auto of = d.alloc<float>(2048);
      d(*k, Grid{1}, o, o64, of, in);
      d.synchronize();
      bool interp = std::string(dev) == "interp";
      (interp ? want32 : got32) = o.download<int32_t>();
      (interp ? want64 : got64) = o64.download<int64_t>();
      (interp ? wantf : gotf) = of.download<float>();
    }
    CHECK(want32 == got32);
    CHECK(want64 == got64);
    CHECK(wantf == gotf);
  }
}

TEST_CASE("reductions, scans and shape ops match the interpreter", "[gpu]") {
  REQUIRE_GPU();
  auto k = compile(reductions, {.name = "reductions"});
  std::vector<std::vector<int32_t>> idx_want, idx_got;
  same_on_both<float>([&](Device& d) {
    auto x = d.upload(random<float>(2048, -3, 3, 5));
    auto out = d.alloc<float>(6272 + 2048);
    auto idx = d.alloc<int32_t>(96);
    d(k, Grid{1}, out, x, idx);
    d.synchronize();
    (d.name() == "interp" ? idx_want : idx_got).push_back(idx.download<int32_t>());
    return std::vector<std::vector<float>>{out.download<float>()};
  }, 1e-5, 1e-5);
  CHECK(idx_want == idx_got);
}

TEST_CASE("loops with carried values and if_ match at trip counts 0, 1, 2, many", "[gpu]") {
  REQUIRE_GPU();
  auto k = compile(loop_if, {.name = "loop_if"});
  for (int trips : {0, 1, 2, 37}) same_out<float>(k, Grid{1}, 128 * 40, -1, 1, 6, 256, trips, 1e-5, 1e-5);
}

TEST_CASE("atomics match the interpreter", "[gpu]") {
  REQUIRE_GPU();
  auto k = compile(atomics, {.name = "atomics"});
  std::vector<int32_t> maxes_want, maxes_got;
  same_on_both<float>([&](Device& d) {
    // Integer-valued inputs make the float sums exact in any order.
    std::vector<float> hx(N);
    std::vector<int32_t> hk(N);
    std::mt19937 rng(7);
    for (int i = 0; i < N; ++i) hx[i] = float(int(rng() % 9) - 4), hk[i] = int32_t(rng() % 16);
    auto x = d.upload(hx), kk = d.upload(hk);
    auto sums = d.upload(std::vector<float>(16, 0.0f));
    std::vector<int32_t> init(32, -1);
    std::fill(init.begin() + 16, init.end(), 1 << 30);
    auto maxes = d.upload(init);
    d(k, Grid{uint32_t(cdiv(N, BLOCK))}, sums, maxes, x, kk, N);
    d.synchronize();
    auto m = maxes.download<int32_t>();
    (d.name() == "interp" ? maxes_want : maxes_got) = m;
    return std::vector<std::vector<float>>{sums.download<float>()};
  }, 0, 0);
  CHECK(maxes_want == maxes_got);
}

// The vectorized path: each thread's 4 contiguous f32 move as one 16-byte
// load of each input and one 16-byte store of each of the 22 results.
TEST_CASE("a bandwidth kernel's loads and stores are vectorized", "[codegen]") {
  auto k = compile(float_ops, {.name = "float_ops"});
  std::string ptx = codegen::emit_stage(*k.impl(), codegen_checks::aligned(k), "sm_90a", codegen::Stage::Asm);
  CHECK(codegen_checks::count(ptx, R"(ld\.global[.a-z0-9_:]*\.v4\.b32)") == 2);
  CHECK(codegen_checks::count(ptx, R"(st\.global[.a-z0-9_:]*\.v4\.b32)") == 22);
}

// Its speed, for the log: not a target (those live in bench/; under
// compute-sanitizer it runs 1000 times slower).
TEST_CASE("a bandwidth kernel's speed on the device", "[gpu]") {
  REQUIRE_GPU();
  auto k = compile(float_ops, {.name = "float_ops"});
  Device d = Device::get("cuda");
  const int n = 1 << 22;
  auto a = d.upload(random<float>(n, -1, 1, 8)), b = d.upload(random<float>(n, 1, 2, 9));
  auto out = d.alloc<float>(size_t(22) * n);
  double ms = d.time_ms([&] { d(k, Grid{uint32_t(n / BLOCK)}, out, a, b, n); }, 5);
  double gbps = (2.0 + 22.0) * n * 4 / (ms * 1e-3) / 1e9;
  WARN("float_ops over 2^22 elements: " << ms << " ms, " << gbps << " GB/s");
}
