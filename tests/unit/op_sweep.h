// The op sweep's shared vocabulary (test_op_sweep.cpp runs it): the ops
// and families a combination exercises, a combination (Combo), the
// expectation table's rows, and the kernel that traces a batch of
// combinations (op_sweep_kernel.cpp). The combinations and the table are in
// op_sweep_cases.cpp. See test_op_sweep.cpp for the approach.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tiledsl/tiledsl.h"

namespace op_sweep {

using namespace tl;
using Shape = std::vector<int64_t>;
using ir::OpKind;

// ------------------------------------------------------------------ the sweep's vocabulary

// What a combination exercises: an op of ops.def as the public API spells it.
#define SWEEP_OPS(X)                                                                                         \
  X(Full, "full") X(Arange, "arange") X(ProgramId, "program_id") X(NumPrograms, "num_programs")              \
  X(Splat, "splat") X(Broadcast, "broadcast_to") X(ExpandDims, "expand_dims") X(Reshape, "reshape")         \
  X(Permute, "permute") X(Join, "join") X(Split, "split")                                                    \
  X(Add, "+") X(Sub, "-") X(Mul, "*") X(Div, "/") X(Rem, "%") X(And, "&") X(Or, "|") X(Xor, "^")            \
  X(Shl, "<<") X(Shr, ">>") X(Minimum, "minimum") X(Maximum, "maximum") X(Cmp, "cmp") X(Where, "where")     \
  X(Fma, "fma") X(MulHi, "umulhi")                                                                           \
  X(Neg, "neg") X(BitNot, "~") X(LogicalNot, "!") X(Abs, "abs") X(Exp, "exp") X(Exp2, "exp2") X(Log, "log") \
  X(Log2, "log2") X(Sqrt, "sqrt") X(Rsqrt, "rsqrt") X(Sin, "sin") X(Cos, "cos") X(Tanh, "tanh")            \
  X(Erf, "erf") X(Floor, "floor") X(Ceil, "ceil") X(Hint, "max_contiguous(multiple_of(x, 1), 1)")           \
  X(Cast, "cast") X(Bitcast, "bitcast") X(PtrBitcast, "bitcast<ptr>") X(AddPtr, "ptr+")                      \
  X(Sum, "sum") X(Max, "max") X(Min, "min") X(Argmax, "argmax") X(Argmin, "argmin") X(Reduce, "reduce")     \
  X(Cumsum, "cumsum") X(Cumprod, "cumprod")                                                                  \
  X(Dot, "dot") X(DotTrans, "dot(a, trans(b))") X(DotLoop, "dot in a K loop")                               \
  X(DotJoin, "dot(reshape(join(x, 2x)))")                                                                    \
  X(Load, "load") X(Store, "store") X(AtomicAdd, "atomic_add") X(AtomicMax, "atomic_max")                   \
  X(AtomicMin, "atomic_min") X(AtomicXchg, "atomic_xchg") X(AtomicAnd, "atomic_and")                        \
  X(AtomicOr, "atomic_or") X(AtomicXor, "atomic_xor") X(AtomicCas, "atomic_cas")                            \
  X(For, "range") X(ForScalar, "range (scalar carried)") X(ForNested, "range in range") X(If, "if_")        \
  X(Assert, "device_assert") X(Print, "device_print")

enum class Op : uint8_t {
#define X(E, N) E,
  SWEEP_OPS(X)
#undef X
};
inline const char* op_str(Op op) {
  static const char* const names[] = {
#define X(E, N) N,
      SWEEP_OPS(X)
#undef X
  };
  return names[int(op)];
}

inline constexpr DType kAll[] = {DType::i1,  DType::i8,     DType::i16,    DType::i32, DType::i64,
                                 DType::u8,  DType::u16,    DType::u32,    DType::u64, DType::f8e4m3,
                                 DType::f8e5m2, DType::f16, DType::bf16, DType::f32, DType::f64};

// One combination: an op, its element types, shapes and mode.
struct Combo {
  Op op;
  DType in;                  // element type of the operands
  DType to = DType::i1;      // cast/bitcast target, addptr offset, dot accumulator (when has_to)
  bool has_to = false;
  Shape shape = {};          // operand shape ([M, K, N] for dots)
  int axis = 0;              // reduce/scan/expand_dims axis; program_id axis
  Shape extra = {};          // reshape target, permute order, broadcast source
  std::string mode = {};     // cmp predicate, dot precision, hint, sem/scope, "reverse", ...
  DType result = DType::i1;  // element type the results must have
  OpKind kind = OpKind::Constant;  // the Tile IR op that must be in the traced kernel

  std::string label() const {
    auto shape_s = [](const Shape& s) {
      std::string r = "[";
      for (size_t i = 0; i < s.size(); ++i) r += (i ? "," : "") + std::to_string(s[i]);
      return r + "]";
    };
    std::string l = std::string(op_str(op)) + "<" + std::string(dtype_name(in));
    if (has_to) l += "," + std::string(dtype_name(to));
    l += ">" + shape_s(shape);
    if (op == Op::ExpandDims || op == Op::ProgramId || op == Op::NumPrograms || op == Op::Sum || op == Op::Max ||
        op == Op::Min || op == Op::Argmax || op == Op::Argmin || op == Op::Reduce || op == Op::Cumsum ||
        op == Op::Cumprod)
      l += " axis=" + std::to_string(axis);
    if (!extra.empty()) l += " " + shape_s(extra);
    if (!mode.empty()) l += " " + mode;
    return l;
  }
};

// A combination the C++ types of the API reject (a requires-clause): not
// traced; the expectation table must say so.
struct Inexpressible {};

enum class Family { Shape, Binary, Unary, Cast, Reduce, ArgReduce, GenericReduce, Scan, Dot, Memory, Atomic, Control };
const char* family_str(Family f);

// Every combination of a family on a target.
std::vector<Combo> combos_of(Family f, const std::string& target);

inline bool is_f8(DType d) { return d == DType::f8e4m3 || d == DType::f8e5m2; }
inline bool is_nvidia(const std::string& target) { return target.rfind("sm_", 0) == 0; }
inline bool any_target(const std::string&) { return true; }

// ------------------------------------------------------------------ what is expected to fail

enum class Stage { Inexpressible, Trace, Codegen };
const char* stage_str(Stage s);

// One row of the table: combinations (on targets) that must fail at
// `stage` with `message` in the error. Every row must match a combination
// of each family and target it names.
struct Expected {
  const char* why;
  Family family;
  Stage stage;
  const char* message;  // fragment of the tl::Error (Stage::Inexpressible: none)
  std::function<bool(const Combo&)> when;
  std::function<bool(const std::string&)> on = any_target;
};

// The expectation table (op_sweep_cases.cpp).
extern const std::vector<Expected> kExpected;

// The combinations the kernel traces (set around tl::compile).
extern thread_local const std::vector<const Combo*>* g_batch;

// Traces every combination of g_batch, each into its own slots of the buffers.
void sweep_kernel(ptr<bool> p_i1, ptr<int8_t> p_i8, ptr<int16_t> p_i16, ptr<int32_t> p_i32, ptr<int64_t> p_i64,
                  ptr<uint8_t> p_u8, ptr<uint16_t> p_u16, ptr<uint32_t> p_u32, ptr<uint64_t> p_u64, ptr<f8e4m3> p_e4m3,
                  ptr<f8e5m2> p_e5m2, ptr<f16> p_f16, ptr<bf16> p_bf16, ptr<float> p_f32, ptr<double> p_f64,
                  scalar<int32_t> n);

}  // namespace op_sweep
