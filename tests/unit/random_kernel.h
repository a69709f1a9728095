// Random well-typed kernels for differential testing (issue 11 §2).
//
// One uint64 seed and an op budget give one kernel, deterministically:
// `generate(seed, budget)` returns a Program (a small SSA listing of
// tl:: operations: masked loads with ragged sizes, arithmetic, casts,
// reductions, scans, shape ops, dots, tl::range loops with carried values,
// tl::if_, masked stores), and `random_kernel` is the fixed-signature kernel
// whose body traces the Program published in a thread_local for the
// duration of tl::compile (a traced kernel is a C++ function, so the
// generator state has to reach it that way).
//
// Every value carries an interval and an exactness flag decided while
// generating; the generator uses them to stay well conditioned (divisors,
// log and sqrt arguments bounded away from 0, sin/cos arguments in
// [-pi, pi], magnitudes below each dtype's overflow) and to apply
// discontinuous ops (comparisons, floor, float->int casts, argmax, rem) to
// exact values only. `error_bounds` then derives, per stored value, how far
// a conforming NVIDIA back end may differ from the interpreter: 0 for
// integers and for floats computed only by correctly rounded ops, else a
// bound built from each op's documented accuracy (random_kernel_errors.cpp
// lists them) propagated through the op's Lipschitz constant over its interval.
//
// Shrinking: generation draws ops one at a time, and everything that closes
// a program (loop yields, the stores) comes from streams of its own, so the
// kernel of budget k is the first k ops of the kernel of any larger budget.
// `shrink` finds the smallest failing budget, then replaces ops one by one
// with constants of the same type and interval (which keeps every later op
// well defined) and drops stores, keeping each change that still fails.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tiledsl/tiledsl.h"

namespace randk {

using tl::DType;

// What a value is, as the generator knows it.
struct Val {
  DType dt = DType::f32;
  std::vector<int64_t> shape;  // empty: a scalar
  double lo = 0, hi = 0;       // every element, on every device, lies in [lo, hi]
  bool exact = true;           // the GPU computes it bit for bit as the interpreter
  bool wild = false;           // bits from a bitcast: no interval; only stored
  int64_t numel() const {
    int64_t n = 1;
    for (auto d : shape) n *= d;
    return n;
  }
};

enum class Kind : uint8_t {
  Load,         // dt, shape, region, mask; args: (iv) inside a loop
  Const,        // dt, shape, lit
  Arange,       // [shape0] i32 from 0
  ProgramId,    // scalar i32
  Binary,       // op (Add..Maximum), two operands (broadcast), one dtype
  BinaryMixed,  // op (Add, Mul, Cmp): operands of two dtypes, promoted
  BinaryLit,    // op, one operand and a C++ literal lit (lit_left: literal first)
  Compare,      // pred, two operands of one dtype -> bool
  Select,       // cond, a, b
  Fma,          // a, b, c
  Unary,        // op (Neg, Not, Abs, Exp, ...)
  Clamp,        // x, [lit, lit2] literals
  Cast,         // to dt
  Bitcast,      // to dt
  ExpandDims,   // axis
  Broadcast,    // to shape
  Trans,        // 2-D
  Reshape,      // to shape
  Join,         // a, b -> [.., 2]
  Split,        // [.., 2] -> two results
  Reduce,       // op (Add: sum, Maximum: max, Minimum: min), axis
  ArgReduce,    // flag: argmax (else argmin), axis
  CustomReduce, // op (Add, Xor, Maximum) traced through tl::reduce's lambda, axis
  Scan,         // op (Add: cumsum, Mul: cumprod), axis, flag: reverse
  Dot,          // a, b[, acc]; flag: "ieee" precision
  For,          // args: carried inits; out: carried results; body
  If,           // args: cond, then inits; out: results; body / else_body
  Store,        // args: value; slot (element offset in the output buffer of its dtype), mask
};

struct Instr {
  Kind kind = Kind::Const;
  tl::ir::OpKind op = tl::ir::OpKind::Add;
  std::string pred;            // Compare / BinaryMixed cmp
  std::vector<int> args;       // operand value ids
  std::vector<int> out;        // result value ids
  DType dt = DType::f32;       // Load/Const/Cast/Bitcast target
  std::vector<int64_t> shape;  // Load/Const/Broadcast/Reshape shape
  int axis = 0;
  bool flag = false;
  bool lit_left = false;
  double lit = 0, lit2 = 0;    // literals (ints are exact in a double here: |v| < 2^53)
  int region = 0;              // Load: value distribution of the input buffer
  int mask = 0;                // Load/Store: 0 none, 1 ragged along the last dim, 2 ragged along both
  int64_t slot = 0;            // Store: element offset
  // For: trip count lo..hi by 1 (hi from the `trips` parameter when traced_hi).
  int lo = 0, hi = 0;
  bool traced_hi = false;
  int iv = -1;                       // For: the induction variable's value id
  std::vector<int> body_args;        // For: carried values inside the body
  std::vector<int> yields, else_yields;
  std::vector<Instr> body, else_body;
  int id = -1;                       // generation order (what shrink refers to)
};

struct GenOptions {
  // Skip combinations that crash or are known-unsupported today (listed in
  // random_kernel_gen_*.cpp, each with the issue it belongs to); the skipped
  // ones are counted in Program::notes. TILEDSL_RANDOM_ALL=1 turns it off.
  bool avoid_known_issues = true;
  // Size limits: elements of a tile (loops divide it by their trip counts)
  // and the largest M, N, K of a dot. CI compiles small kernels; the GPU
  // run can afford the defaults.
  int64_t max_numel = 2048;
  int64_t max_dot_dim = 64;
  // Float sums are modelled as summed in any order (gamma_(n-1) bound): a
  // GPU combines in its layout's order, not the interpreter's tree
  // (ops.def reduce). Off (TILEDSL_RANDOM_REDUCE_ANY_ORDER=0), sums of
  // exact floats are expected bit for bit, which holds between two runs
  // of the interpreter.
  bool reduce_any_order = true;
};

struct Program {
  uint64_t seed = 0;
  int budget = 0;
  GenOptions opts{};
  std::vector<Val> vals{};
  std::vector<Instr> code{};
  // Launch: grid.x programs; the three scalar parameters.
  uint32_t grid = 1;
  int32_t n = 0, m = 0, trips = 0;
  bool fp_fusion = true;
  int num_warps = 4;
  // Elements of each output buffer (by dtype index), and what the
  // generator avoided (see avoid_known_issues).
  std::vector<int64_t> out_elems{};
  std::vector<std::string> notes{};
  int ops = 0;  // instructions generated (the budget used)
  // A readable listing: one line per op, C++-like.
  std::string str() const;
};

// Element counts of each input buffer: 3 regions (value distributions).
constexpr int64_t kRegionElems = 16384;
constexpr int kRegions = 3;
constexpr int kNumDtypes = 14;  // every tl::DType, in enum order


Program generate(uint64_t seed, int budget, const GenOptions& opts = {});
// Per Store (in program order): the bound on |gpu - interpreter| of each
// element (0: bit-for-bit, NaN equal to NaN, -0 equal to +0).
std::vector<double> error_bounds(const Program& p);

// The kernel: traces the Program published by `compile_program`.
void random_kernel(tl::ptr<bool>, tl::ptr<int8_t>, tl::ptr<int16_t>, tl::ptr<int32_t>, tl::ptr<int64_t>,
                   tl::ptr<uint8_t>, tl::ptr<uint32_t>, tl::ptr<uint64_t>, tl::ptr<tl::f8e4m3>, tl::ptr<tl::f8e5m2>,
                   tl::ptr<tl::f16>, tl::ptr<tl::bf16>, tl::ptr<float>, tl::ptr<double>,  // inputs
                   tl::ptr<bool>, tl::ptr<int8_t>, tl::ptr<int16_t>, tl::ptr<int32_t>, tl::ptr<int64_t>,
                   tl::ptr<uint8_t>, tl::ptr<uint32_t>, tl::ptr<uint64_t>, tl::ptr<tl::f8e4m3>, tl::ptr<tl::f8e5m2>,
                   tl::ptr<tl::f16>, tl::ptr<tl::bf16>, tl::ptr<float>, tl::ptr<double>,  // outputs
                   tl::scalar<int32_t> n, tl::scalar<int32_t> m, tl::scalar<int32_t> trips);

tl::Kernel compile_program(const Program& p);

// Raw bytes of every buffer of one run, by dtype index.
struct Buffers {
  std::vector<std::vector<uint8_t>> in, out;
};
// Fresh random inputs (from `data_seed`) in each region's distribution,
// outputs filled with a fixed pattern (so that masked-off stores show).
Buffers make_buffers(const Program& p, uint64_t data_seed);
// Runs the kernel on `dev` and returns the output bytes.
std::vector<std::vector<uint8_t>> run(tl::Device& dev, const tl::Kernel& k, const Program& p, const Buffers& b);

// Compares interpreter and GPU outputs store by store with error_bounds;
// returns "" or a description of the first few mismatches.
std::string compare(const Program& p, const std::vector<std::vector<uint8_t>>& want,
                    const std::vector<std::vector<uint8_t>>& got);

// The launch-argument facts codegen may specialize on for this program
// (integers as launched; pointers 256-byte aligned).
std::vector<std::pair<bool, int64_t>> arg_facts(const Program& p);

// Shrinking. `fails(p)` reruns the check on a candidate program.
struct Shrunk {
  Program program;
  int budget = 0;
  std::vector<int> replaced;  // op ids replaced by constants
  int attempts = 0;
};
Shrunk shrink(uint64_t seed, int budget, const GenOptions& opts, const std::function<bool(const Program&)>& fails);
// The program of `seed`/`budget` with the ops `replaced` turned into
// constants and the stores not in `keep_stores` dropped (empty: keep all).
Program edit(const Program& p, const std::vector<int>& replaced, const std::vector<int>& drop_stores);

// Runs `fn` in a forked child process so that a crash (SIGSEGV, abort)
// is reported instead of ending the test binary. Returns "" when the child
// exited 0, else what happened (signal, or the child's message).
std::string in_child(const std::function<std::string()>& fn, int timeout_s = 120);

}  // namespace randk
