// Front-end errors: each bad kernel must fail tl::compile with a tl::Error
// naming this file, the offending line, the op, what was expected and what
// was found. Each kernel records the line of its bad statement in g_line
// (at trace time, just before the statement runs).
#include <catch2/catch.hpp>
#include <optional>

#include <string>

#include "tiledsl/tiledsl.h"

using namespace tl;

namespace {

int g_line = 0;
#define MARK g_line = __LINE__;

std::string at_line(int line) { return std::string(__FILE__) + ":" + std::to_string(line) + ": "; }

// Compiles `fn` and returns the error message (fails the test if none).
template <class F>
std::string compile_error(F fn) {
  g_line = 0;
  try {
    compile(fn);
  } catch (const Error& e) {
    return e.what();
  }
  FAIL("expected tl::compile to throw tl::Error");
  return "";
}

void shape_mismatch(ptr<float> x) {
  auto a = arange(0, 64);
  auto b = arange(0, 32);
  MARK auto c = a + b;
  store(x + c, 1.0f);
}

void non_power_of_two(ptr<float> x) {
  MARK auto offs = arange(0, 100);
  store(x + offs, 1.0f);
}

void zeros_bad_shape(ptr<float> x) {
  MARK auto z = zeros<float>({17, 8});
  store(x + arange(0, 8), sum(z, 0));
}

void mask_wrong_shape(ptr<float> x) {
  auto offs = arange(0, 64);
  auto mask = arange(0, 32) < 10;
  MARK auto v = load(x + offs, mask);
  store(x + offs, v);
}

void store_mask_wrong_shape(ptr<float> x) {
  auto offs = arange(0, 64);
  auto mask = col(arange(0, 64)) < 10;  // [64, 1] would grow the [64] pointers
  MARK store(x + offs, 1.0f, mask);
}

void dot_shape_mismatch(ptr<bf16> a, ptr<float> c) {
  auto ta = load(a + col(arange(0, 16)) * 32 + row(arange(0, 32)));  // [16, 32]
  auto tb = load(a + col(arange(0, 16)) * 16 + row(arange(0, 16)));  // [16, 16]
  MARK auto r = dot(ta, tb);
  store(c + col(arange(0, 16)) * 16 + row(arange(0, 16)), r);
}

void dot_dtype_mismatch(ptr<bf16> a, ptr<float> c) {
  auto offs = col(arange(0, 16)) * 16 + row(arange(0, 16));
  auto t = load(a + offs);
  auto acc = zeros<int32_t>({16, 16});
  MARK auto r = dot(t, t, acc);
  store(c + offs, r);
}

void dot_integer_inputs(ptr<int32_t> a) {
  auto offs = col(arange(0, 16)) * 16 + row(arange(0, 16));
  auto t = load(a + offs);
  MARK auto r = dot(t, t);
  store(a + offs, r);
}

// A C++ floating-point number that is not a whole number, stored through
// integer pointers or given as their load's `other`.
void fractional_other(ptr<int32_t> x) {
  auto offs = arange(0, 16);
  MARK store(x + offs, load(x + offs, offs < 8, 0.5f));
}

// Whole numbers written as C++ floating-point numbers convert to the
// pointee, as Triton converts `other=0.0` of an integer load: `other` of
// an i32 and a bool load, a stored value, an atomic's operand.
void whole_float_numbers(ptr<int32_t> x, ptr<bool> flags, ptr<uint8_t> bytes) {
  auto offs = arange(0, 16);                                           // [16] i32
  store(x + offs, load(x + offs, offs < 8, -3.0f));                    // -3 past 8
  store(flags + offs, load(flags + offs, offs < 8, 1.0f));             // true past 8
  store(bytes + offs, 7.0);
  atomic_add(x + offs, 2.0f);
}

void literal_out_of_range(ptr<uint8_t> x) {
  auto v = load(x + arange(0, 16));
  MARK auto w = v + 300;
  store(x + arange(0, 16), w);
}

void bitcast_width(ptr<float> x) {
  auto v = load(x + arange(0, 16));
  MARK auto w = bitcast<int16_t>(v);
  store(x + arange(0, 16), cast<float>(w));
}

void bad_reduce_axis(ptr<float> x) {
  auto v = load(x + arange(0, 16));
  MARK auto s = sum(v, 1);
  store(x, s);
}

// expand_dims's axis indexes the result, one dim more than the tile given.
void bad_expand_dims_axis(ptr<float> x) {
  auto v = load(x + arange(0, 16));  // [16] f32
  MARK auto e = expand_dims(v, 3);
  store(x + arange(0, 16), reshape(e, {16}));
}

void mixed_signedness_cdiv(ptr<int32_t> x, ptr<uint32_t> y) {
  auto a = load(x + arange(0, 16));  // [16] i32
  auto b = load(y + arange(0, 16));  // [16] u32
  MARK auto q = cdiv(a, b);          // `a / b` does not compile; cdiv sees the types only at trace time
  store(y + arange(0, 16), q);
}

// An integer divided by a literal 0 is known at trace time (undefined on
// a GPU); a float divided by one is an infinity, as in C++.
void int_rem_by_literal_zero(ptr<int32_t> x) {
  auto a = load(x + arange(0, 16));  // [16] i32
  MARK auto q = a % 0;
  store(x + arange(0, 16), q);
}
void float_div_by_literal_zero(ptr<float> x) {
  auto a = load(x + arange(0, 16));  // [16] f32
  store(x + arange(0, 16), a / 0);
}

void atomic_bad_sem(ptr<int32_t> x) {
  MARK atomic_add(x, 1, {.sem = "seq_cst"});
}

void atomic_bad_scope(ptr<int32_t> x) {
  auto offs = arange(0, 16);
  MARK atomic_cas(x + offs, 0, 1, {.scope = "cluster"});
}

void break_in_loop(ptr<float> x, scalar<int32_t> n) {
  auto acc = zeros<float>({16});
  MARK for (auto i : range(0, n)) {
    acc = acc + 1.0f;
    break;
  }
  store(x + arange(0, 16), acc);
}

void return_in_loop(ptr<float> x, scalar<int32_t> n) {
  auto acc = zeros<float>({16});
  MARK for (auto i : range(0, n)) {
    acc = acc + 1.0f;
    store(x + arange(0, 16), acc);
    return;
  }
}

int g_entry_line = 0;
void type_change_in_loop(ptr<float> x, scalar<int32_t> n) {
  g_entry_line = __LINE__ + 1;
  auto v = zeros<float>({16});
  MARK for (auto i : range(0, n)) {
    g_entry_line = g_entry_line * 1000 + __LINE__ + 1;  // both lines, packed
    v = zeros<float>({32});
  }
  store(x + arange(0, 32), v);
}

void type_change_in_if(ptr<float> x, scalar<int32_t> n) {
  auto v = zeros<float>({16});
  MARK if_(n > 0, [&] { v = zeros<float>({32}); });
  store(x + arange(0, 32), v);
}

void tile_condition(ptr<float> x) {
  auto c = arange(0, 16) < 4;
  MARK if_(c, [&] { store(x, 1.0f); });
}

void zero_step(ptr<float> x, scalar<int32_t> n) {
  MARK for (auto i : range(0, n, 0)) store(x + i, 1.0f);
}

void combine_assigns_outer(ptr<float> x) {
  auto v = load(x + arange(0, 16));
  auto seen = zeros<float>({16});
  MARK auto r = reduce(v, 0, [&](tile<float> a, tile<float> b) {
    seen = v;  // writes a variable of the kernel from inside the combine function
    return a + b;
  });
  store(x, r);
}

void failing_op_in_loop(ptr<float> x, scalar<int32_t> n) {
  auto acc = zeros<float>({16});
  for (auto i : range(0, n)) {
    MARK acc = acc + cast<float>(arange(0, 32));
  }
  store(x + arange(0, 16), acc);
}

void good_kernel(ptr<float> x, scalar<int32_t> n) {
  auto acc = zeros<float>({16});
  for (auto i : range(0, n)) acc = acc + 1.0f;
  store(x + arange(0, 16), acc);
}

}  // namespace

TEST_CASE("errors: broadcasting shape mismatch", "[frontend][errors]") {
  std::string msg = compile_error(shape_mismatch);
  CHECK(msg == at_line(g_line) + "add: expected shapes that broadcast together, found [64] and [32]");
}

TEST_CASE("errors: tile dims not c x 2^k", "[frontend][errors]") {
  std::string msg = compile_error(non_power_of_two);
  CHECK(msg == at_line(g_line) + "arange: expected a length end - start of c x 2^k (c = 1, 3, ..., 15), found 100 (0..100)");
  msg = compile_error(zeros_bad_shape);
  CHECK(msg == at_line(g_line) + "zeros: expected a tile shape of rank 0..5 with dims c x 2^k (c = 1, 3, ..., 15), found [17, 8]");
}

TEST_CASE("errors: mask of the wrong shape", "[frontend][errors]") {
  std::string msg = compile_error(mask_wrong_shape);
  CHECK(msg == at_line(g_line) + "load: expected shapes that broadcast together, found [64] and [32]");
  msg = compile_error(store_mask_wrong_shape);
  CHECK(msg == at_line(g_line) +
                   "store: expected a mask of the pointers' shape [64] (or broadcastable to it), found [64, 1]");
}

TEST_CASE("errors: dot shapes and dtypes", "[frontend][errors]") {
  std::string msg = compile_error(dot_shape_mismatch);
  CHECK(msg == at_line(g_line) + "dot: expected [M, K] x [K, N] with one K, found [16, 32] x [16, 16]");
  msg = compile_error(dot_dtype_mismatch);
  CHECK(msg == at_line(g_line) + "dot: expected a float accumulator for bf16 inputs, found tile<16x16xi32>");
  msg = compile_error(dot_integer_inputs);
  CHECK(msg == at_line(g_line) + "dot: expected float or 8-bit integer inputs, found i32");
}

TEST_CASE("errors: dtype mismatches at trace time", "[frontend][errors]") {
  std::string msg = compile_error(literal_out_of_range);
  CHECK(msg == at_line(g_line) + "add: expected a value representable in u8, found 300");
  msg = compile_error(bitcast_width);
  CHECK(msg == at_line(g_line) + "bitcast: expected a type of 32 bits like f32, found i16 (16 bits)");
  msg = compile_error(bad_reduce_axis);
  CHECK(msg == at_line(g_line) + "sum: expected an axis in -1..0 for a rank-1 tile, found 1");
  msg = compile_error(bad_expand_dims_axis);
  CHECK(msg == at_line(g_line) + "expand_dims: expected an axis in -2..1 (of the result) for a rank-1 tile, found 3");
}

TEST_CASE("errors: a C++ floating-point number converts to an integer pointee only when whole", "[frontend][errors][types]") {
  // 0.0f as `other` of an i32 load was refused ("expected a value
  // representable in i32, found 0.000000"), though full<int32_t> took it.
  std::string msg = compile_error(fractional_other);
  CHECK(msg == at_line(g_line) + "load: expected a value representable in i32, found 0.500000");
  Kernel k = compile(whole_float_numbers);
  Device dev = Device::get("interp");
  std::vector<int32_t> hx(16);
  for (int i = 0; i < 16; ++i) hx[size_t(i)] = 10 * i;
  Buffer x = dev.upload(hx), flags = dev.upload(std::vector<bool>(16, false)), bytes = dev.alloc<uint8_t>(16);
  dev(k, Grid{1}, x, flags, bytes);
  dev.synchronize();
  auto ox = x.download<int32_t>();
  auto of = flags.download<bool>();
  auto ob = bytes.download<uint8_t>();
  for (int i = 0; i < 16; ++i) {
    INFO("element " << i);
    CHECK(ox[size_t(i)] == (i < 8 ? 10 * i : -3) + 2);
    CHECK(of[size_t(i)] == (i >= 8));
    CHECK(ob[size_t(i)] == 7);
  }
}

TEST_CASE("errors: integer division of mixed signedness", "[frontend][errors][types]") {
  std::string msg = compile_error(mixed_signedness_cdiv);
  CHECK(msg == at_line(g_line) +
                   "cdiv: expected integers of one signedness (cast one of them), found tile<16xi32> and tile<16xu32>");
}

TEST_CASE("errors: an integer divided by a literal 0", "[frontend][errors][types]") {
  std::string msg = compile_error(int_rem_by_literal_zero);
  CHECK(msg == at_line(g_line) + "rem: expected a nonzero divisor, found the literal 0 (integer division by zero)");
  CHECK_NOTHROW(compile(float_div_by_literal_zero, {.name = "float_div"}));
}

TEST_CASE("errors: an atomic's memory order and scope", "[frontend][errors][atomics]") {
  std::string msg = compile_error(atomic_bad_sem);
  CHECK(msg == at_line(g_line) +
                   "atomic_add: expected a memory order (.sem) \"relaxed\", \"acquire\", \"release\" or \"acq_rel\", "
                   "found \"seq_cst\"");
  msg = compile_error(atomic_bad_scope);
  CHECK(msg == at_line(g_line) + "atomic_cas: expected a memory scope (.scope) \"cta\", \"gpu\" or \"sys\", found \"cluster\"");
}

TEST_CASE("errors: break or return inside a traced loop", "[frontend][errors][loop]") {
  std::string msg = compile_error(break_in_loop);
  std::string loop = std::string(__FILE__) + ":" + std::to_string(g_line);
  CHECK(msg == loop + ": range: loop at " + loop +
                   " was left without finishing its body (break or return inside a traced loop?)");
  msg = compile_error(return_in_loop);
  loop = std::string(__FILE__) + ":" + std::to_string(g_line);
  CHECK(msg == loop + ": range: loop at " + loop +
                   " was left without finishing its body (break or return inside a traced loop?)");
  // The failed traces left nothing behind: the next compile works.
  CHECK_NOTHROW(compile(good_kernel));
}

TEST_CASE("errors: a loop-carried variable changing its shape names both lines", "[frontend][errors][loop]") {
  std::string msg = compile_error(type_change_in_loop);
  int entry = g_entry_line / 1000, assigned = g_entry_line % 1000;
  CHECK(msg == at_line(g_line) +
                   "range: expected a loop-carried variable to keep its type tile<16xf32> (value at loop entry from " +
                   std::string(__FILE__) + ":" + std::to_string(entry) + "), found tile<32xf32> (assigned at " +
                   std::string(__FILE__) + ":" + std::to_string(assigned) + ")");
  msg = compile_error(type_change_in_if);
  std::string file = __FILE__;
  CHECK(msg == at_line(g_line) + "if_: expected a variable assigned in a branch to keep its type tile<16xf32> "
                                 "(value before the if from " + file + ":" + std::to_string(g_line - 1) +
                   "), found tile<32xf32> (assigned at " + file + ":" + std::to_string(g_line) + ")");
}

TEST_CASE("errors: bad control flow arguments", "[frontend][errors]") {
  std::string msg = compile_error(tile_condition);
  CHECK(msg == at_line(g_line) + "if_: expected a scalar bool condition, found tile<16xi1>");
  msg = compile_error(zero_step);
  CHECK(msg == at_line(g_line) + "range: expected a nonzero step, found 0");
  msg = compile_error(combine_assigns_outer);
  CHECK_THAT(msg, Catch::StartsWith(at_line(g_line) +
                                    "reduce: expected the combine function to leave outer variables unchanged"));
}

TEST_CASE("errors: an error inside a loop body is reported as itself", "[frontend][errors][loop]") {
  std::string msg = compile_error(failing_op_in_loop);
  CHECK(msg == at_line(g_line) + "add: expected shapes that broadcast together, found [16] and [32]");
  CHECK(!detail::tracing());
  CHECK_NOTHROW(compile(good_kernel));
}

TEST_CASE("errors: traced ops outside tl::compile", "[frontend][errors]") {
  int line = __LINE__ + 1;
  REQUIRE_THROWS_WITH(arange(0, 16),
                      at_line(line) + "arange: expected to run inside tl::compile, found no active trace");
  line = __LINE__ + 1;
  REQUIRE_THROWS_WITH(program_id(0),
                      at_line(line) + "program_id: expected to run inside tl::compile, found no active trace");
}

// A tile kept from one trace and used in the next (a user's cache of a
// traced value): an error saying what happened.
std::optional<tile<float>> g_kept;
void keeps_a_tile(ptr<float> x) {
  auto v = load(x + arange(0, 16));  // [16] f32
  g_kept = v;
  store(x + arange(0, 16), v);
}
void uses_the_kept_tile(ptr<float> x) { store(x + arange(0, 16), *g_kept + 1.0f); }

TEST_CASE("errors: a tile kept from another trace", "[frontend][errors]") {
  CHECK_NOTHROW(compile(keeps_a_tile));
  std::string msg = compile_error(uses_the_kept_tile);
  CHECK_THAT(msg, Catch::Contains("expected a traced value of the kernel being traced (inside tl::compile), found one "
                                  "from another trace (a tile kept in a static, global or captured variable"));
  g_kept.reset();
}

// ---- limits (issue 11): tile size at trace time, options at tl::compile ----

namespace {

template <int64_t N>
void long_arange(ptr<float> x) {
  MARK auto offs = arange(0, N);
  store(x + offs, 1.0f);
}

void broadcast_too_big(ptr<float> x) {
  auto r = col(arange(0, 2048));  // [2048, 1]
  auto c = row(arange(0, 1024));  // [1, 1024]
  MARK auto offs = r * 1024 + c;  // [2048, 1024]: 2^21 elements
  store(x + offs, 1.0f);
}

void huge_zeros(ptr<float> x) {
  MARK auto z = zeros<float>({1 << 15, 1 << 15});  // 2^30 elements: once a bare std::bad_alloc
  store(x + arange(0, 16), 1.0f);
  (void)z;
}

void plain_store(ptr<float> x) { store(x + arange(0, 128), 1.0f); }

template <int STAGES>
void staged_loop(ptr<float> x, scalar<int32_t> n) {
  auto acc = zeros<float>({16});
  MARK for (auto i : range(0, n, 1, {.num_stages = STAGES})) acc = acc + load(x + i * 16 + arange(0, 16));
  store(x + arange(0, 16), acc);
}

// The error of compiling plain_store with `opts`; `line` is this call's line.
std::string options_error(CompileOptions opts, int& line) {
  line = __LINE__ + 2;
  try {
    compile(plain_store, opts);
  } catch (const Error& e) {
    return e.what();
  }
  FAIL("expected tl::compile to throw tl::Error");
  return "";
}

}  // namespace

TEST_CASE("errors: a tile holds at most tl::max_tile_elements", "[frontend][errors][limits]") {
  STATIC_REQUIRE(max_tile_elements == (int64_t(1) << 20));  // Triton's limit
  CHECK_NOTHROW(compile(long_arange<(int64_t(1) << 20)>));
  std::string msg = compile_error(long_arange<(int64_t(1) << 24)>);  // hung PTX generation
  CHECK(msg == at_line(g_line) +
                   "arange: expected a tile of at most 1048576 elements (tl::max_tile_elements), found "
                   "tile<16777216xi32> in kernel 'kernel'");
  msg = compile_error(broadcast_too_big);
  CHECK_THAT(msg, Catch::StartsWith(at_line(g_line)) &&
                      Catch::EndsWith(": expected a tile of at most 1048576 elements (tl::max_tile_elements), found "
                                      "tile<2048x1024xi32> in kernel 'kernel'"));
  msg = compile_error(huge_zeros);
  CHECK(msg == at_line(g_line) +
                   "constant: expected a tile of at most 1048576 elements (tl::max_tile_elements), found "
                   "tile<32768x32768xf32> in kernel 'kernel'");
}

TEST_CASE("errors: num_warps, num_stages, num_ctas and the name are checked by tl::compile", "[frontend][errors][limits]") {
  int line = 0;
  for (int w : {0, 3, 6, -4, 64, 48, 36}) {
    std::string msg = options_error({.name = "k", .num_warps = w}, line);
    CHECK(msg == at_line(line) + "kernel 'k': num_warps must be a power of two from 1 to 32 (1024 threads of 32 "
                                 "lanes), or 12 or 24 (warpgroups in threes), found " + std::to_string(w));
  }
  for (int s : {0, -5}) {
    std::string msg = options_error({.name = "k", .num_stages = s}, line);
    CHECK(msg == at_line(line) + "kernel 'k': num_stages must be at least 1 (1: no software pipelining), found " +
                     std::to_string(s));
  }
  std::string msg = options_error({.name = "k", .num_ctas = 3}, line);
  CHECK(msg == at_line(line) + "kernel 'k': num_ctas must be 1, 2, 4 or 8, found 3");
  for (int p : {0, 9, -1}) {
    msg = options_error({.name = "k", .programs_per_sm = p}, line);
    CHECK(msg == at_line(line) + "kernel 'k': programs_per_sm must be 1 to 8, found " + std::to_string(p));
  }
  // The name is the binary's entry symbol (NVPTX's back end aborted the
  // process on a space).
  for (std::string n : {"my kernel", "9lives", "a-b", "k\"", "\u00e9t\u00e9"}) {
    msg = options_error({.name = n}, line);
    CHECK(msg == at_line(line) + "kernel name must be an identifier (letters, digits and '_', not starting with a "
                                 "digit), found '" + n + "'");
  }
  for (int w : {1, 2, 4, 8, 16, 32}) CHECK_NOTHROW(compile(plain_store, {.name = "k", .num_warps = w}));
  CHECK_NOTHROW(compile(plain_store, {.name = "k", .num_stages = 1}));
}

TEST_CASE("errors: a loop's own num_stages is checked at the loop's line", "[frontend][errors][limits][loop]") {
  std::string msg = compile_error(staged_loop<0>);
  CHECK(msg == at_line(g_line) + "kernel 'kernel': range: num_stages must be at least 1 (1: no software "
                                 "pipelining), found 0");
  msg = compile_error(staged_loop<-5>);
  CHECK(msg == at_line(g_line) + "kernel 'kernel': range: num_stages must be at least 1 (1: no software "
                                 "pipelining), found -5");
  CHECK_NOTHROW(compile(staged_loop<1>));
  CHECK_NOTHROW(compile(staged_loop<-1>));  // -1: the kernel's num_stages
}
