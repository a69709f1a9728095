// The op sweep's combinations (every op with every element type, axis,
// predicate, precision, hint and order, per family and target) and its
// expectation table: what must fail, at which stage, with which message.
// See test_op_sweep.cpp.
#include <string>
#include <utility>
#include <vector>

#include "op_sweep.h"

namespace op_sweep {

// ------------------------------------------------------------------ the combinations

const char* family_str(Family f) {
  switch (f) {
    case Family::Shape: return "creation and shape";
    case Family::Binary: return "elementwise binary";
    case Family::Unary: return "elementwise unary";
    case Family::Cast: return "casts and pointers";
    case Family::Reduce: return "sum max min";
    case Family::ArgReduce: return "argmax argmin";
    case Family::GenericReduce: return "generic reduce";
    case Family::Scan: return "cumsum cumprod";
    case Family::Dot: return "dot";
    case Family::Memory: return "load store";
    case Family::Atomic: return "atomics";
    case Family::Control: return "control flow and debugging";
  }
  return "?";
}

DType accumulation(DType d) {
  if (is_float(d)) return bit_width(d) < 32 ? DType::f32 : d;
  return bit_width(d) < 32 ? DType::i32 : d;
}

// Reductions and scans: every axis of a rank-1, rank-2 and rank-3 tile.
const std::vector<std::pair<Shape, int>> kAxes = {
    {{128}, 0}, {{16, 32}, 0}, {{16, 32}, 1}, {{4, 8, 16}, 0}, {{4, 8, 16}, 1}, {{4, 8, 16}, 2}};
// f8 computes through software conversions, and a 1-byte type takes
// 16-element vectors wherever its minor dimension allows: tiles whose minor
// dimension is 4 keep the same lowering at a quarter of the code (an f8
// reduction of [16, 32] along axis 0 compiles for 0.4 s).
const std::vector<std::pair<Shape, int>> kAxesF8 = {
    {{128}, 0}, {{32, 4}, 0}, {{32, 4}, 1}, {{4, 8, 4}, 0}, {{4, 8, 4}, 1}, {{4, 8, 4}, 2}};

// f8 inputs of a dot run on a matrix unit there (elsewhere on FMAs, whose
// code for a [64, 32] x [32, 64] tile takes 3 to 5 s to compile; gfx942's
// f8 MFMA is not used yet).
bool f8_matrix_unit(const std::string& target) { return target == "sm_90a"; }

std::vector<Combo> combos_of(Family f, const std::string& target) {
  std::vector<Combo> v;
  auto add = [&](Combo c) { v.push_back(std::move(c)); };
  const Shape tile2{16, 32};
  // The operand shape of elementwise ops and casts (see kAxesF8).
  auto tile_of = [&](DType a, DType b) { return is_f8(a) || is_f8(b) ? Shape{128, 4} : tile2; };
  switch (f) {
    case Family::Shape:
      add({.op = Op::Arange, .in = DType::i32, .shape = {64}, .result = DType::i32, .kind = OpKind::Arange});
      for (int axis = 0; axis < 3; ++axis) {
        add({.op = Op::ProgramId, .in = DType::i32, .axis = axis, .result = DType::i32, .kind = OpKind::ProgramId});
        add({.op = Op::NumPrograms, .in = DType::i32, .axis = axis, .result = DType::i32,
             .kind = OpKind::NumPrograms});
      }
      for (DType d : kAll) {
        add({.op = Op::Full, .in = d, .shape = tile2, .result = d, .kind = OpKind::Constant});
        add({.op = Op::Full, .in = d, .shape = {}, .result = d, .kind = OpKind::Constant});
        add({.op = Op::Splat, .in = d, .shape = tile2, .result = d, .kind = OpKind::Splat});
        add({.op = Op::Broadcast, .in = d, .shape = tile2, .extra = {1, 32}, .result = d, .kind = OpKind::Broadcast});
        add({.op = Op::Broadcast, .in = d, .shape = tile2, .extra = {16, 1}, .result = d, .kind = OpKind::Broadcast});
        for (int axis : {0, 1}) add({.op = Op::ExpandDims, .in = d, .shape = {128}, .axis = axis, .result = d,
                                     .kind = OpKind::ExpandDims});
        for (int axis : {0, 2}) add({.op = Op::ExpandDims, .in = d, .shape = tile2, .axis = axis, .result = d,
                                     .kind = OpKind::ExpandDims});
        add({.op = Op::Reshape, .in = d, .shape = tile2, .extra = {512}, .result = d, .kind = OpKind::Reshape});
        add({.op = Op::Reshape, .in = d, .shape = tile2, .extra = {4, 4, 32}, .result = d, .kind = OpKind::Reshape});
        add({.op = Op::Reshape, .in = d, .shape = {4, 8, 16}, .extra = {32, 16}, .result = d, .kind = OpKind::Reshape});
        add({.op = Op::Permute, .in = d, .shape = tile2, .extra = {1, 0}, .result = d, .kind = OpKind::Trans});
        for (Shape order : {Shape{0, 2, 1}, Shape{1, 2, 0}, Shape{2, 1, 0}})
          add({.op = Op::Permute, .in = d, .shape = {4, 8, 16}, .extra = order, .result = d, .kind = OpKind::Trans});
        add({.op = Op::Join, .in = d, .shape = {128}, .result = d, .kind = OpKind::Join});
        add({.op = Op::Join, .in = d, .shape = tile2, .result = d, .kind = OpKind::Join});
        add({.op = Op::Split, .in = d, .shape = {128, 2}, .result = d, .kind = OpKind::Split});
        add({.op = Op::Split, .in = d, .shape = {16, 16, 2}, .result = d, .kind = OpKind::Split});
        add({.op = Op::Split, .in = d, .shape = {2}, .result = d, .kind = OpKind::Split});  // into scalars
      }
      break;
    case Family::Binary:
      for (DType d : kAll) {
        const std::pair<Op, OpKind> ops[] = {
            {Op::Add, OpKind::Add}, {Op::Sub, OpKind::Sub}, {Op::Mul, OpKind::Mul}, {Op::Div, OpKind::Div},
            {Op::Rem, OpKind::Rem}, {Op::And, OpKind::And}, {Op::Or, OpKind::Or}, {Op::Xor, OpKind::Xor},
            {Op::Shl, OpKind::Shl}, {Op::Shr, OpKind::Shr}, {Op::Minimum, OpKind::Minimum},
            {Op::Maximum, OpKind::Maximum}, {Op::Where, OpKind::Select}, {Op::Fma, OpKind::Fma},
            {Op::MulHi, OpKind::MulHi}};
        for (auto [op, kind] : ops) add({.op = op, .in = d, .shape = tile_of(d, d), .result = d, .kind = kind});
        for (const char* pred : {"lt", "le", "gt", "ge", "eq", "ne"})
          add({.op = Op::Cmp, .in = d, .shape = tile_of(d, d), .mode = pred, .result = DType::i1, .kind = OpKind::Cmp});
      }
      break;
    case Family::Unary:
      for (DType d : kAll) {
        const std::pair<Op, OpKind> ops[] = {
            {Op::Neg, OpKind::Neg},   {Op::BitNot, OpKind::Not}, {Op::Abs, OpKind::Abs},
            {Op::Exp, OpKind::Exp},   {Op::Exp2, OpKind::Exp2},  {Op::Log, OpKind::Log},
            {Op::Log2, OpKind::Log2}, {Op::Sqrt, OpKind::Sqrt},  {Op::Rsqrt, OpKind::Rsqrt},
            {Op::Sin, OpKind::Sin},   {Op::Cos, OpKind::Cos},    {Op::Tanh, OpKind::Tanh},
            {Op::Erf, OpKind::Erf},   {Op::Floor, OpKind::Floor}, {Op::Ceil, OpKind::Ceil},
            {Op::Hint, OpKind::Hint}};
        for (auto [op, kind] : ops) add({.op = op, .in = d, .shape = tile_of(d, d), .result = d, .kind = kind});
        // !x: `not` on bools, x == 0 otherwise.
        add({.op = Op::LogicalNot, .in = d, .shape = tile_of(d, d), .result = DType::i1,
             .kind = d == DType::i1 ? OpKind::Not : OpKind::Cmp});
      }
      break;
    case Family::Cast:
      for (DType d : kAll)
        for (DType t : kAll) {
          if (t == d) continue;  // the identity is no op
          add({.op = Op::Cast, .in = d, .to = t, .has_to = true, .shape = tile_of(d, t), .result = t,
               .kind = OpKind::Cast});
          add({.op = Op::Bitcast, .in = d, .to = t, .has_to = true, .shape = tile_of(d, t), .result = t,
               .kind = OpKind::Bitcast});
        }
      for (DType d : kAll) {
        DType t = d == DType::i32 ? DType::f32 : DType::i32;
        add({.op = Op::PtrBitcast, .in = d, .to = t, .has_to = true, .shape = {256}, .result = t,
             .kind = OpKind::Bitcast});
      }
      for (DType d : {DType::i1, DType::i8, DType::bf16, DType::f32, DType::f64})
        for (DType t : kAll)
          add({.op = Op::AddPtr, .in = d, .to = t, .has_to = true, .shape = tile2, .result = d,
               .kind = OpKind::AddPtr});
      break;
    case Family::Reduce:
    case Family::ArgReduce:
    case Family::GenericReduce:
    case Family::Scan:
      for (DType d : kAll)
        for (auto& [shape, axis] : is_f8(d) ? kAxesF8 : kAxes) {
          auto one = [&](Op op, DType result, OpKind kind, std::string mode = "") {
            add({.op = op, .in = d, .shape = shape, .axis = axis, .mode = mode, .result = result, .kind = kind});
          };
          if (f == Family::Reduce) {
            one(Op::Sum, accumulation(d), OpKind::Reduce);
            one(Op::Max, d, OpKind::Reduce);
            one(Op::Min, d, OpKind::Reduce);
          } else if (f == Family::ArgReduce) {
            one(Op::Argmax, DType::i32, OpKind::Reduce);
            one(Op::Argmin, DType::i32, OpKind::Reduce);
          } else if (f == Family::GenericReduce) {
            one(Op::Reduce, d, OpKind::Reduce);
          } else {
            // The direction is the scan's, not its combine's: cumsum takes both.
            one(Op::Cumsum, accumulation(d), OpKind::Scan);
            one(Op::Cumsum, accumulation(d), OpKind::Scan, "reverse");
            one(Op::Cumprod, accumulation(d), OpKind::Scan);
          }
        }
      break;
    case Family::Dot: {
      // The default accumulator: f32 for float inputs (f64 for f64), i32 for 8-bit integers.
      auto acc_of = [](DType d) { return d == DType::f64 ? DType::f64 : is_float(d) ? DType::f32 : DType::i32; };
      for (DType d : kAll)
        for (const char* prec : {"tf32", "ieee"})
          add({.op = Op::Dot, .in = d, .shape = {16, 16, 16}, .mode = prec, .result = acc_of(d), .kind = OpKind::Dot});
      for (DType d : kAll)
        for (DType acc : {DType::f16, DType::bf16, DType::f32, DType::f64, DType::i32})
          add({.op = Op::Dot, .in = d, .to = acc, .has_to = true, .shape = {16, 16, 16}, .mode = "tf32",
               .result = acc, .kind = OpKind::Dot});
      // Shapes the matrix units tile (wgmma on sm_90a), and a bad precision.
      for (DType d : {DType::i8, DType::u8, DType::f8e4m3, DType::f8e5m2, DType::f16, DType::bf16, DType::f32})
        if (!is_f8(d) || f8_matrix_unit(target))
          add({.op = Op::Dot, .in = d, .shape = {64, 32, 64}, .mode = "tf32", .result = acc_of(d),
               .kind = OpKind::Dot});
      for (const char* prec : {"tf32x3", "tf32x6"})
        add({.op = Op::Dot, .in = DType::f32, .shape = {16, 16, 16}, .mode = prec, .result = DType::f32,
             .kind = OpKind::Dot});
      for (DType d : {DType::i8, DType::f16, DType::bf16, DType::f32}) {
        add({.op = Op::DotTrans, .in = d, .shape = {32, 32, 32}, .mode = "tf32", .result = acc_of(d),
             .kind = OpKind::Dot});
        add({.op = Op::DotJoin, .in = d, .shape = {16, 16, 16}, .mode = "tf32", .result = acc_of(d),
             .kind = OpKind::Dot});
      }
      for (DType d : {DType::f8e4m3, DType::f16, DType::bf16, DType::f32})
        add({.op = Op::DotLoop, .in = d, .shape = is_f8(d) && !f8_matrix_unit(target) ? Shape{16, 16, 16} : Shape{64, 32, 64},
             .mode = "tf32", .result = DType::f32, .kind = OpKind::Dot});
      break;
    }
    case Family::Memory:
      for (DType d : kAll) {
        for (const char* mode : {"", "mask", "mask,other"})
          add({.op = Op::Load, .in = d, .shape = tile2, .mode = mode, .result = d, .kind = OpKind::Load});
        add({.op = Op::Load, .in = d, .shape = {}, .result = d, .kind = OpKind::Load});
        add({.op = Op::Load, .in = d, .shape = {1024}, .result = d, .kind = OpKind::Load});
        for (const char* mode : {"", "mask"})
          add({.op = Op::Store, .in = d, .shape = tile2, .mode = mode, .result = d, .kind = OpKind::Store});
        add({.op = Op::Store, .in = d, .shape = {}, .result = d, .kind = OpKind::Store});
      }
      for (DType d : {DType::i1, DType::i8, DType::bf16, DType::f32, DType::f64}) {
        for (const char* mode : {"cache=.ca", "cache=.cg", "cache=.cs", "cache=.lu", "cache=.cv", "evict=evict_first",
                                 "evict=evict_last", "evict=evict_normal", "volatile"})
          add({.op = Op::Load, .in = d, .shape = tile2, .mode = mode, .result = d, .kind = OpKind::Load});
        for (const char* mode : {"cache=.wb", "cache=.cg", "cache=.cs", "cache=.wt", "evict=evict_first",
                                 "evict=evict_last", "evict=evict_normal"})
          add({.op = Op::Store, .in = d, .shape = tile2, .mode = mode, .result = d, .kind = OpKind::Store});
      }
      // Hints the op does not have.
      add({.op = Op::Load, .in = DType::f32, .shape = tile2, .mode = "cache=.wb", .result = DType::f32,
           .kind = OpKind::Load});
      add({.op = Op::Store, .in = DType::f32, .shape = tile2, .mode = "cache=.ca", .result = DType::f32,
           .kind = OpKind::Store});
      add({.op = Op::Load, .in = DType::f32, .shape = tile2, .mode = "evict=evict_sometimes", .result = DType::f32,
           .kind = OpKind::Load});
      break;
    case Family::Atomic:
      for (DType d : kAll) {
        for (Op op : {Op::AtomicAdd, Op::AtomicMax, Op::AtomicMin, Op::AtomicXchg, Op::AtomicAnd, Op::AtomicOr,
                      Op::AtomicXor})
          add({.op = op, .in = d, .shape = {128}, .result = d, .kind = OpKind::AtomicRmw});
        add({.op = Op::AtomicCas, .in = d, .shape = {128}, .result = d, .kind = OpKind::AtomicCas});
      }
      for (const char* sem : {"relaxed", "acquire", "release", "acq_rel"})
        for (const char* scope : {"cta", "gpu", "sys"}) {
          std::string mode = std::string("sem=") + sem + " scope=" + scope;
          add({.op = Op::AtomicAdd, .in = DType::f32, .shape = {128}, .mode = mode, .result = DType::f32,
               .kind = OpKind::AtomicRmw});
          add({.op = Op::AtomicCas, .in = DType::i32, .shape = {128}, .mode = mode, .result = DType::i32,
               .kind = OpKind::AtomicCas});
        }
      for (DType d : {DType::i32, DType::f32, DType::u64})
        add({.op = Op::AtomicAdd, .in = d, .shape = {}, .result = d, .kind = OpKind::AtomicRmw});
      add({.op = Op::AtomicAdd, .in = DType::i32, .shape = {128}, .mode = "sem=seq_cst", .result = DType::i32,
           .kind = OpKind::AtomicRmw});
      add({.op = Op::AtomicCas, .in = DType::i32, .shape = {128}, .mode = "scope=warp", .result = DType::i32,
           .kind = OpKind::AtomicCas});
      break;
    case Family::Control:
      for (DType d : kAll) {
        add({.op = Op::For, .in = d, .shape = tile2, .result = d, .kind = OpKind::For});
        add({.op = Op::ForScalar, .in = d, .shape = {}, .result = d, .kind = OpKind::For});
        add({.op = Op::If, .in = d, .shape = tile2, .result = d, .kind = OpKind::If});
        add({.op = Op::If, .in = d, .shape = {}, .result = d, .kind = OpKind::If});
        add({.op = Op::Print, .in = d, .shape = {128}, .result = d, .kind = OpKind::Print});
      }
      add({.op = Op::ForNested, .in = DType::f32, .shape = {128}, .result = DType::f32, .kind = OpKind::For});
      add({.op = Op::Assert, .in = DType::i1, .shape = {128}, .result = DType::i1, .kind = OpKind::Assert});
      add({.op = Op::Assert, .in = DType::i1, .shape = {}, .result = DType::i1, .kind = OpKind::Assert});
      break;
  }
  return v;
}

// ------------------------------------------------------------------ what is expected to fail

const char* stage_str(Stage s) {
  return s == Stage::Inexpressible ? "rejected by the C++ types" : s == Stage::Trace ? "a trace-time error"
                                                                                      : "a code generation error";
}

bool is_math(Op op) { return op >= Op::Exp && op <= Op::Ceil; }
bool is_bitwise_atomic(Op op) { return op == Op::AtomicAnd || op == Op::AtomicOr || op == Op::AtomicXor; }

const std::vector<Expected> kExpected = {
    // ---- rejected by the C++ types of the API (a requires-clause)
    {"float math functions take float tiles", Family::Unary, Stage::Inexpressible, "",
     [](const Combo& c) { return is_math(c.op) && !is_float(c.in); }},
    {"~ takes integer tiles", Family::Unary, Stage::Inexpressible, "",
     [](const Combo& c) { return c.op == Op::BitNot && is_float(c.in); }},
    {"bitwise operators take integer tiles", Family::Binary, Stage::Inexpressible, "",
     [](const Combo& c) { return (c.op >= Op::And && c.op <= Op::Shr) && is_float(c.in); }},
    {"umulhi takes integer tiles", Family::Binary, Stage::Inexpressible, "",
     [](const Combo& c) { return c.op == Op::MulHi && is_float(c.in); }},
    {"pointer offsets are integers other than bool", Family::Cast, Stage::Inexpressible, "",
     [](const Combo& c) { return c.op == Op::AddPtr && (is_float(c.to) || c.to == DType::i1); }},

    // ---- trace-time errors (tl::compile), on every target
    {"hints take integer or pointer tiles", Family::Unary, Stage::Trace, "multiple_of: expected an integer or pointer",
     [](const Combo& c) { return c.op == Op::Hint && (is_float(c.in) || c.in == DType::i1); }},
    {"umulhi takes integers wider than bool", Family::Binary, Stage::Trace, "umulhi: expected integers wider than i1",
     [](const Combo& c) { return c.op == Op::MulHi && c.in == DType::i1; }},
    {"fma takes float operands", Family::Binary, Stage::Trace, "fma: expected floating-point operands",
     [](const Combo& c) { return c.op == Op::Fma && !is_float(c.in); }},
    {"bitcast keeps the bit width", Family::Cast, Stage::Trace, "bitcast: expected a type of",
     [](const Combo& c) { return c.op == Op::Bitcast && bit_width(c.in) != bit_width(c.to); }},
    {"dot takes float or 8-bit integer inputs", Family::Dot, Stage::Trace,
     "dot: expected float or 8-bit integer inputs",
     [](const Combo& c) { return !is_float(c.in) && c.in != DType::i8 && c.in != DType::u8; }},
    {"a dot of 8-bit integers accumulates in i32", Family::Dot, Stage::Trace,
     "dot: expected an i32 accumulator for",
     [](const Combo& c) { return (c.in == DType::i8 || c.in == DType::u8) && c.has_to && c.to != DType::i32; }},
    {"a dot of floats accumulates in a float", Family::Dot, Stage::Trace, "dot: expected a float accumulator for",
     [](const Combo& c) { return is_float(c.in) && c.has_to && !is_float(c.to); }},
    {"input_precision is tf32, tf32x3 or ieee", Family::Dot, Stage::Trace, "dot: expected input_precision",
     [](const Combo& c) { return c.mode == "tf32x6" && c.in == DType::f32; }},
    {"loads take the cache hints .ca .cg .cs .lu .cv", Family::Memory, Stage::Trace,
     "'load' expects 'cache' to be one of", [](const Combo& c) { return c.op == Op::Load && c.mode == "cache=.wb"; }},
    {"stores take the cache hints .wb .cg .cs .wt", Family::Memory, Stage::Trace,
     "'store' expects 'cache' to be one of", [](const Combo& c) { return c.op == Op::Store && c.mode == "cache=.ca"; }},
    {"eviction hints are evict_first, evict_last, evict_normal", Family::Memory, Stage::Trace,
     "'load' expects 'evict' to be one of", [](const Combo& c) { return c.mode == "evict=evict_sometimes"; }},
    {"atomic and/or/xor take integer pointers", Family::Atomic, Stage::Trace, "expected pointers to integers",
     [](const Combo& c) { return is_bitwise_atomic(c.op) && is_float(c.in); }},
    {"memory orders are relaxed, acquire, release, acq_rel", Family::Atomic, Stage::Trace,
     "atomic_add: expected a memory order (.sem)", [](const Combo& c) { return c.mode == "sem=seq_cst"; }},
    {"memory scopes are cta, gpu, sys", Family::Atomic, Stage::Trace, "atomic_cas: expected a memory scope (.scope)",
     [](const Combo& c) { return c.mode == "scope=warp"; }},

    // ---- code generation errors (what a target cannot lower)
    {"no GPU has f8 atomic add, max, min", Family::Atomic, Stage::Codegen, "is not supported on GPU targets",
     [](const Combo& c) {
       return is_f8(c.in) && (c.op == Op::AtomicAdd || c.op == Op::AtomicMax || c.op == Op::AtomicMin);
     }},
    {"device_print needs the HIP printf buffer on AMD", Family::Control, Stage::Codegen,
     "'print' cannot be lowered: device_print is not supported on AMD targets",
     [](const Combo& c) { return c.op == Op::Print; }, [](const std::string& t) { return !is_nvidia(t); }},
};

}  // namespace op_sweep
