// Typed op builders shared by the op headers: dtype promotion (one constexpr
// definition used both by the C++ result types and at trace time), numpy
// broadcasting, weakly typed C++ literals, and the checks that turn bad
// shapes and dtypes into "file:line: <op>: expected ..., found ..." errors.
// The builders are compiled into the library (lib/frontend/build.cpp) so the
// public headers stay thin typed wrappers that compile quickly.
#pragma once
// The libraries are built with hidden visibility; what this header declares
// is their interface (CMakeLists.txt: "Exported symbols").
#pragma GCC visibility push(default)

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "tiledsl/detail/trace.h"

namespace tl::detail {

// ---- promotion ----------------------------------------------------------

// Tile-tile promotion: float beats int, the wider float wins, two floats
// of one width give the narrowest float holding both exactly (bf16 and
// f16: f32; e4m3 and e5m2: f16), i1 yields to any other type, the wider
// integer wins and same-width signed/unsigned gives unsigned. This is
// Triton's computation_type_impl except where docs/language.md says
// otherwise (bf16 + f16, bf16 + f8, bf16 or f8 with an integer).
constexpr DType promote(DType a, DType b) {
  if (a == b) return a;
  bool fa = is_float(a), fb = is_float(b);
  if (fa && fb) {
    if (bit_width(a) != bit_width(b)) return bit_width(a) > bit_width(b) ? a : b;
    return bit_width(a) == 8 ? DType::f16 : DType::f32;
  }
  if (fa) return a;
  if (fb) return b;
  if (a == DType::i1) return b;
  if (b == DType::i1) return a;
  if (is_unsigned(a) == is_unsigned(b)) return bit_width(a) >= bit_width(b) ? a : b;
  DType u = is_unsigned(a) ? a : b, s = is_unsigned(a) ? b : a;
  return bit_width(s) > bit_width(u) ? s : u;
}

// C++ numbers mixed with tiles are weakly typed (as Python numbers in
// Triton): the tile's dtype wins, except that a float literal makes an
// integer tile f32 and an integer literal makes a bool tile i32.
enum class LitKind : uint8_t { None, Bool, Int, Float };
constexpr DType promote_literal(DType tile, LitKind lit) {
  if (is_float(tile)) return tile;
  if (lit == LitKind::Float) return DType::f32;
  if (tile == DType::i1 && lit == LitKind::Int) return DType::i32;
  return tile;
}

// What one operand of a binary op is, at C++ compile time or trace time.
struct OperandDesc {
  bool is_tile = false;
  DType dtype = DType::i32;
  bool is_ptr = false;
  LitKind lit = LitKind::None;
};
// Binary op families that differ in typing. DivRem (`/`, `%`) is Arith
// that rejects integers of different signedness, as Triton does: C++
// would convert the signed one to unsigned, so -7 / 2u would be 2147483644.
enum class BinCat : uint8_t { Add, Sub, Arith, DivRem, Bitwise, Compare };
struct ResultDesc {
  bool ok = false;
  DType dtype = DType::i32;
  bool is_ptr = false;
};

// Two traced integer operands, one signed and one unsigned (i1 is neither).
constexpr bool mixed_signedness(const OperandDesc& a, const OperandDesc& b) {
  auto integer = [](const OperandDesc& o) {
    return o.is_tile && !o.is_ptr && is_int(o.dtype) && o.dtype != DType::i1;
  };
  return integer(a) && integer(b) && is_unsigned(a.dtype) != is_unsigned(b.dtype);
}

constexpr bool is_offset(const OperandDesc& o) {
  return o.is_tile ? (!o.is_ptr && is_int(o.dtype) && o.dtype != DType::i1) : o.lit == LitKind::Int;
}

// The result element of `a <cat> b`, or !ok when the combination is not
// allowed (it then does not compile).
constexpr ResultDesc binary_result(BinCat cat, OperandDesc a, OperandDesc b) {
  if (!a.is_tile && !b.is_tile) return {};
  if (a.is_ptr || b.is_ptr) {
    // Pointer arithmetic: ptr + int, int + ptr, ptr - int.
    if (a.is_ptr && b.is_ptr) return {};
    if (cat == BinCat::Add || (cat == BinCat::Sub && a.is_ptr)) {
      const OperandDesc& p = a.is_ptr ? a : b;
      if (!is_offset(a.is_ptr ? b : a)) return {};
      return {true, p.dtype, true};
    }
    return {};
  }
  DType d = a.is_tile && b.is_tile ? promote(a.dtype, b.dtype)
            : a.is_tile            ? promote_literal(a.dtype, b.lit)
                                   : promote_literal(b.dtype, a.lit);
  if (cat == BinCat::Bitwise && !is_int(d)) return {};
  if (cat == BinCat::DivRem && mixed_signedness(a, b)) return {};
  if (cat == BinCat::Compare) return {true, DType::i1, false};
  return {true, d, false};
}

// ---- operands -------------------------------------------------------------

// A traced value or a C++ number, as passed from the typed headers.
struct Operand {
  Value* value = nullptr;  // set for a traced operand
  LitKind lit = LitKind::None;
  int64_t i = 0;           // Bool/Int literal (bit pattern for u64 above INT64_MAX)
  bool big_unsigned = false;
  double f = 0;            // Float literal

  Operand() = default;
  Operand(Value* v) : value(v) {}
  template <class N, std::enable_if_t<std::is_arithmetic_v<N>, int> = 0>
  static Operand number(N n) {
    Operand o;
    if constexpr (std::is_same_v<N, bool>) {
      o.lit = LitKind::Bool;
      o.i = n ? 1 : 0;
    } else if constexpr (std::is_integral_v<N>) {
      o.lit = LitKind::Int;
      o.i = int64_t(n);
      if constexpr (std::is_unsigned_v<N> && sizeof(N) == 8) o.big_unsigned = n > uint64_t(INT64_MAX);
    } else {
      o.lit = LitKind::Float;
      o.f = double(n);
    }
    return o;
  }
  bool is_literal() const { return value == nullptr; }
};

// ---- shapes -------------------------------------------------------------

using Shape = std::vector<int64_t>;
std::string shape_str(const Shape& s);  // "[64, 32]"
// Fails unless `s` is a tile shape: rank 1..max_tile_rank (0 when allow_scalar), dims tl::is_tile_dim.
void check_shape(const Shape& s, const ir::Loc& loc, std::string_view op, bool allow_scalar = false);
// numpy broadcasting of two shapes; fails naming both.
Shape broadcast_shapes(const Shape& a, const Shape& b, const ir::Loc& loc, std::string_view op);
// Splats / expands / broadcasts `v` to `shape`; fails when it cannot.
Value* broadcast_to(Value* v, const Shape& shape, const ir::Loc& loc, std::string_view op);
int normalize_axis(int axis, int rank, const ir::Loc& loc, std::string_view op);

// ---- builders -------------------------------------------------------------

// A constant of element `dtype` and `shape` holding `lit`; fails when the
// value is not representable in `dtype` (u8 and 300).
Value* constant(const Operand& lit, DType dtype, const Shape& shape, const ir::Loc& loc, std::string_view op);
Value* cast(Value* v, DType to, const ir::Loc& loc, std::string_view op = "cast");
Value* bitcast(Value* v, DType to, bool to_ptr, const ir::Loc& loc);
// `v` with facts its author promises (ops.def's hint): `div` and `cont`
// give one entry per dimension (one for a scalar), or one for every
// dimension; empty: none. `op` names the caller (multiple_of, ...).
Value* hint(Value* v, std::vector<int64_t> div, std::vector<int64_t> cont, const ir::Loc& loc, std::string_view op);
// Elementwise binary op with promotion and broadcasting. For BinCat::Compare
// `pred` is the cmp predicate.
Value* binary(BinCat cat, ir::OpKind kind, std::string_view op, const Operand& a, const Operand& b,
              const ir::Loc& loc, std::string_view pred = {});
Value* unary(ir::OpKind kind, std::string_view op, Value* a, const ir::Loc& loc);
Value* logical_not(Value* a, const ir::Loc& loc);
Value* select(const Operand& cond, const Operand& a, const Operand& b, const ir::Loc& loc);
Value* fma(const Operand& a, const Operand& b, const Operand& c, const ir::Loc& loc);
// Traced cdiv of two integer operands (at least one traced).
Value* cdiv(const Operand& a, const Operand& b, const ir::Loc& loc);

Value* program_id(ir::OpKind kind, int axis, const ir::Loc& loc);
Value* arange(int64_t start, int64_t end, const ir::Loc& loc);
Value* full(DType dtype, const Shape& shape, const Operand& value, const ir::Loc& loc, std::string_view op);

Value* expand_dims(Value* v, int axis, const ir::Loc& loc);
Value* reshape(Value* v, const Shape& shape, const ir::Loc& loc);
Value* permute(Value* v, const std::vector<int64_t>& order, const ir::Loc& loc, std::string_view op);
Value* join(Value* a, Value* b, const ir::Loc& loc);
std::pair<Value*, Value*> split(Value* v, const ir::Loc& loc);

// Built-in reductions and scans. `kind` is the combining op (Add, Mul,
// Maximum, Minimum); sum/prod-like reductions first widen narrow floats to
// f32 and narrow integers to i32.
Value* reduce_builtin(ir::OpKind kind, std::string_view op, Value* x, int axis, bool widen, const ir::Loc& loc);
Value* scan_builtin(ir::OpKind kind, std::string_view op, Value* x, int axis, bool reverse, const ir::Loc& loc);
// Index (i32) of the largest / smallest element along `axis`, lowest index on ties.
Value* arg_reduce(bool is_max, Value* x, int axis, const ir::Loc& loc);
// Checks a generic reduce/scan input and returns the axis normalized.
int check_reduce_input(Value* x, int axis, const ir::Loc& loc, std::string_view op);

// [M,K] x [K,N] (+ acc [M,N]); acc may be null (zeros of the accumulator
// dtype). Rank 3, [B,M,K] x [B,K,N] (+ [B,M,N]): one product a batch element.
// max_num_imprecise_acc > 0 on f8 inputs: at most that many products of K
// summed in the matrix unit before an f32 add (Triton's option).
Value* dot(Value* a, Value* b, Value* acc, const std::string& input_precision, const ir::Loc& loc,
           int64_t max_num_imprecise_acc = 0);

Value* load(Value* ptr, Value* mask, const Operand* other, const std::string& cache, const std::string& evict,
            bool is_volatile, const ir::Loc& loc);
void store(Value* ptr, const Operand& value, Value* mask, const std::string& cache, const std::string& evict,
           const ir::Loc& loc);
// A tensor descriptor's block (descriptor.h): `shape`, `strides` and
// `coords` are i32 scalars, one a dimension of `block`.
Value* descriptor_load(Value* base, const std::vector<Value*>& shape, const std::vector<Value*>& strides,
                       const std::vector<Value*>& coords, const std::vector<int64_t>& block, const ir::Loc& loc);
void descriptor_store(Value* base, const std::vector<Value*>& shape, const std::vector<Value*>& strides,
                      const std::vector<Value*>& coords, const std::vector<int64_t>& block, const Operand& value,
                      const ir::Loc& loc);
// `sem` and `scope`: tl::AtomicOptions' memory order and scope, checked here.
Value* atomic_rmw(const std::string& kind, Value* ptr, const Operand& value, Value* mask, const std::string& sem,
                  const std::string& scope, const ir::Loc& loc);
Value* atomic_cas(Value* ptr, const Operand& cmp, const Operand& value, const std::string& sem,
                  const std::string& scope, const ir::Loc& loc);
void device_assert(Value* cond, const std::string& msg, const ir::Loc& loc);
void assume(Value* cond, const ir::Loc& loc);
// `text`: the attributes "ptx", "ptx_constraints", "amdgcn",
// "amdgcn_constraints" (empty ones are left out). One result per dtype.
std::vector<Value*> inline_asm(const std::vector<std::pair<std::string, std::string>>& text, bool pure, int pack,
                               const std::vector<Value*>& args, const std::vector<DType>& results,
                               const ir::Loc& loc);
void debug_barrier(const ir::Loc& loc);
void device_print(const std::string& prefix, const std::vector<Value*>& values, const ir::Loc& loc);

// A bound of tl::range (`which`: "lower bound", "upper bound", "step") of
// the loop's induction type `iv` (i32 or i64): a C++ integer that fits it
// (a constant), a traced scalar of it, or (in an i64 loop) an i32 scalar,
// widened.
Value* loop_bound(const Operand& b, DType iv, const ir::Loc& loc, const char* which);

}  // namespace tl::detail

#pragma GCC visibility pop
