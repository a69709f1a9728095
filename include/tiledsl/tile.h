// tl::tile<E>: the traced value of a kernel. E is an element type of
// dtype.h (tl::f32, tl::bf16, tl::i32, bool, ...) or tl::pointer<T>; the
// shape is a trace-time value (rank 0 is a scalar). Aliases: tl::scalar<E>,
// tl::ptr<T>.
//
// A tile variable is a handle to a slot of the active trace: copying makes a
// new variable (slot), assigning rebinds the variable to a new SSA value.
// This is what loop-carried detection (control.h) observes.
//
// The arithmetic, bitwise and comparison operators live here as hidden
// friends. Each takes its tile operand through detail::located<E>, whose
// converting constructor has a defaulted std::source_location: that is how an
// operator records the user's line without an explicit argument.
#pragma once
// The libraries are built with hidden visibility; what this header declares
// is their interface (CMakeLists.txt: "Exported symbols").
#pragma GCC visibility push(default)

#include <cstdint>
#include <source_location>
#include <type_traits>
#include <vector>

#include "tiledsl/detail/build.h"
#include "tiledsl/dtype.h"

namespace tl {

// Element type of a tile of global-memory pointers to T.
template <class T>
struct pointer {
  using element_type = T;
};

template <class E>
class tile;
template <class E>
using scalar = tile<E>;
template <class T>
using ptr = tile<pointer<T>>;

namespace detail {

inline ir::Loc to_loc(const std::source_location& l) { return ir::Loc{l.file_name(), int(l.line())}; }

// Element type <-> (dtype, is_ptr).
template <class E>
struct elem_info {
  static constexpr DType dtype = dtype_v<E>;
  static constexpr bool is_ptr = false;
};
template <class T>
struct elem_info<pointer<T>> {
  static constexpr DType dtype = dtype_v<T>;
  static constexpr bool is_ptr = true;
};

template <DType D> struct elem_for;
template <> struct elem_for<DType::i1> { using type = bool; };
template <> struct elem_for<DType::i8> { using type = int8_t; };
template <> struct elem_for<DType::i16> { using type = int16_t; };
template <> struct elem_for<DType::i32> { using type = int32_t; };
template <> struct elem_for<DType::i64> { using type = int64_t; };
template <> struct elem_for<DType::u8> { using type = uint8_t; };
template <> struct elem_for<DType::u16> { using type = uint16_t; };
template <> struct elem_for<DType::u32> { using type = uint32_t; };
template <> struct elem_for<DType::u64> { using type = uint64_t; };
template <> struct elem_for<DType::f8e4m3> { using type = f8e4m3; };
template <> struct elem_for<DType::f8e5m2> { using type = f8e5m2; };
template <> struct elem_for<DType::f16> { using type = f16; };
template <> struct elem_for<DType::bf16> { using type = bf16; };
template <> struct elem_for<DType::f32> { using type = float; };
template <> struct elem_for<DType::f64> { using type = double; };
template <DType D, bool IsPtr>
struct elem_for_desc {
  using type = typename elem_for<D>::type;
};
template <DType D>
struct elem_for_desc<D, true> {
  using type = pointer<typename elem_for<D>::type>;
};

template <class E>
constexpr ir::Type scalar_type_of() {
  return ir::Type{elem_info<E>::dtype, elem_info<E>::is_ptr, {}};
}

// Describes an operand type (tile<E> or a C++ number) for binary_result.
template <class X>
struct operand_of {
  static constexpr bool valid = std::is_arithmetic_v<X>;
  static constexpr OperandDesc desc{false, DType::i32, false,
                                    std::is_same_v<X, bool>       ? LitKind::Bool
                                    : std::is_integral_v<X>       ? LitKind::Int
                                    : std::is_floating_point_v<X> ? LitKind::Float
                                                                  : LitKind::None};
};
template <class E>
struct operand_of<tile<E>> {
  static constexpr bool valid = true;
  static constexpr OperandDesc desc{true, elem_info<E>::dtype, elem_info<E>::is_ptr, LitKind::None};
};
// A narrow float is typed, as a scalar of its type (Triton's
// tl.full((), 2, tl.bfloat16)): tile<bf16> * bf16(2) stays bf16, a f32
// tile with it is f32.
template <narrow_float V>
struct operand_of<V> {
  static constexpr bool valid = true;
  static constexpr OperandDesc desc{true, dtype_of<V>::value, false, LitKind::None};
};

template <BinCat C, class A, class B>
constexpr ResultDesc binary_result_of() {
  if constexpr (operand_of<A>::valid && operand_of<B>::valid)
    return binary_result(C, operand_of<A>::desc, operand_of<B>::desc);
  else
    return {};
}
template <BinCat C, class A, class B>
concept binary_ok = binary_result_of<C, A, B>().ok;
// The element type of `A <C> B` (A, B: tile<E> or a C++ number).
template <BinCat C, class A, class B>
using binary_elem_t =
    typename elem_for_desc<binary_result_of<C, A, B>().dtype, binary_result_of<C, A, B>().is_ptr>::type;

template <class N>
concept number = std::is_arithmetic_v<N>;
// What a binary operator takes beside a tile: a C++ number or a narrow float.
template <class N>
concept scalar_operand = number<N> || narrow_float<N>;

// A fill value (full, full_like; a load's `other`): a C++ number, or one of
// tiledsl's narrow floats (f16, bf16, f8: `tl::full<tl::f16>({8},
// tl::f16(1.0f))`), whose float is exact.
template <class V>
concept fill_value = std::is_arithmetic_v<V> || narrow_float<V>;
template <class V>
Operand fill_number(V value) {
  if constexpr (std::is_arithmetic_v<V>) return Operand::number(value);
  else return Operand::number(float(value));
}

// A tile operand plus the source line of the expression using it.
template <class E>
struct located {
  const tile<E>& t;
  std::source_location where;
  located(const tile<E>& t, std::source_location w = std::source_location::current()) : t(t), where(w) {}
  ir::Loc loc() const { return to_loc(where); }
};
// Same, for the left side of a compound assignment.
template <class E>
struct located_mut {
  tile<E>& t;
  std::source_location where;
  located_mut(tile<E>& t, std::source_location w = std::source_location::current()) : t(t), where(w) {}
  ir::Loc loc() const { return to_loc(where); }
};

template <class X>
Operand operand(const X& x, const ir::Loc& loc = {}) {
  if constexpr (std::is_arithmetic_v<X>)
    return Operand::number(x);
  else if constexpr (narrow_float<X>)
    return Operand(constant(Operand::number(float(x)), dtype_of<X>::value, {}, loc, "number"));
  else
    return Operand(x.value());
}

}  // namespace detail

template <class E>
class tile {
 public:
  using element_type = E;

  // Wraps a traced value in a new variable (used by the op headers).
  explicit tile(detail::Value* v, const ir::Loc& loc = {}) : slot_(detail::slot_new(v, loc)) {}
  tile(const tile& other) : slot_(detail::slot_new(other.value(), {})) {}
  // Moving copies too: every C++ object keeps its own slot, so a moved-from
  // variable can never alias the variable it was moved into.
  tile(tile&& other) : tile(static_cast<const tile&>(other)) {}
  tile& operator=(const tile& other) {
    detail::slot_set(slot_, other.value());
    return *this;
  }
  ~tile() { detail::slot_free(slot_); }

  // A traced value has no C++ truth value at trace time (use tl::if_ or
  // tl::where): tile declares no conversion to bool, so `if (t)` does not
  // compile. A deleted `explicit operator bool` would say so more loudly, but
  // it makes the built-in `!` a candidate and `!t` ambiguous.

  detail::Value* value() const { return detail::slot_get(slot_); }
  ir::Type type() const { return detail::type_of(value()); }
  std::vector<int64_t> shape() const { return type().shape; }
  int rank() const { return int(type().shape.size()); }
  DType dtype() const { return detail::elem_info<E>::dtype; }

  // ---- operators ----------------------------------------------------------
  // Binary operators, for tile <op> tile, tile <op> number, number <op> tile.
#define TL_BINARY_OPERATOR(OPSYM, CAT, KIND, NAME, PRED)                                                   \
  template <class B>                                                                                       \
    requires detail::binary_ok<CAT, tile<E>, tile<B>>                                                      \
  friend tile<detail::binary_elem_t<CAT, tile<E>, tile<B>>> operator OPSYM(detail::located<E> a,           \
                                                                          const tile<B>& b) {              \
    using R = tile<detail::binary_elem_t<CAT, tile<E>, tile<B>>>;                                         \
    return R(detail::binary(CAT, KIND, NAME, detail::operand(a.t), detail::operand(b), a.loc(), PRED));    \
  }                                                                                                        \
  template <detail::scalar_operand N>                                                                      \
    requires detail::binary_ok<CAT, tile<E>, N>                                                            \
  friend tile<detail::binary_elem_t<CAT, tile<E>, N>> operator OPSYM(detail::located<E> a, N b) {          \
    using R = tile<detail::binary_elem_t<CAT, tile<E>, N>>;                                               \
    return R(detail::binary(CAT, KIND, NAME, detail::operand(a.t), detail::operand(b, a.loc()), a.loc(), PRED)); \
  }                                                                                                        \
  template <detail::scalar_operand N>                                                                      \
    requires detail::binary_ok<CAT, N, tile<E>>                                                            \
  friend tile<detail::binary_elem_t<CAT, N, tile<E>>> operator OPSYM(N a, detail::located<E> b) {          \
    using R = tile<detail::binary_elem_t<CAT, N, tile<E>>>;                                               \
    return R(detail::binary(CAT, KIND, NAME, detail::operand(a, b.loc()), detail::operand(b.t), b.loc(), PRED)); \
  }

  TL_BINARY_OPERATOR(+, detail::BinCat::Add, ir::OpKind::Add, "add", "")
  TL_BINARY_OPERATOR(-, detail::BinCat::Sub, ir::OpKind::Sub, "sub", "")
  TL_BINARY_OPERATOR(*, detail::BinCat::Arith, ir::OpKind::Mul, "mul", "")
  TL_BINARY_OPERATOR(/, detail::BinCat::DivRem, ir::OpKind::Div, "div", "")
  TL_BINARY_OPERATOR(%, detail::BinCat::DivRem, ir::OpKind::Rem, "rem", "")
  TL_BINARY_OPERATOR(&, detail::BinCat::Bitwise, ir::OpKind::And, "and", "")
  TL_BINARY_OPERATOR(|, detail::BinCat::Bitwise, ir::OpKind::Or, "or", "")
  TL_BINARY_OPERATOR(^, detail::BinCat::Bitwise, ir::OpKind::Xor, "xor", "")
  TL_BINARY_OPERATOR(<<, detail::BinCat::Bitwise, ir::OpKind::Shl, "shl", "")
  TL_BINARY_OPERATOR(>>, detail::BinCat::Bitwise, ir::OpKind::Shr, "shr", "")
  TL_BINARY_OPERATOR(<, detail::BinCat::Compare, ir::OpKind::Cmp, "cmp", "lt")
  TL_BINARY_OPERATOR(<=, detail::BinCat::Compare, ir::OpKind::Cmp, "cmp", "le")
  TL_BINARY_OPERATOR(>, detail::BinCat::Compare, ir::OpKind::Cmp, "cmp", "gt")
  TL_BINARY_OPERATOR(>=, detail::BinCat::Compare, ir::OpKind::Cmp, "cmp", "ge")
  TL_BINARY_OPERATOR(==, detail::BinCat::Compare, ir::OpKind::Cmp, "cmp", "eq")
  TL_BINARY_OPERATOR(!=, detail::BinCat::Compare, ir::OpKind::Cmp, "cmp", "ne")
#undef TL_BINARY_OPERATOR

  // Compound assignment: `a op= b` is `a = a op b` converted back to E (as in
  // C++), so `acc += x` keeps acc's element type and `p += k` advances a pointer.
#define TL_COMPOUND_OPERATOR(OPSYM, CAT, KIND, NAME)                                                  \
  template <class B>                                                                                  \
    requires(detail::operand_of<B>::valid && detail::binary_ok<CAT, tile<E>, B>)                      \
  friend tile<E>& operator OPSYM(detail::located_mut<E> a, const B & b) {                             \
    ir::Loc loc = a.loc();                                                                            \
    detail::Value* r = detail::binary(CAT, KIND, NAME, detail::operand(std::as_const(a.t)),           \
                                      detail::operand(b, loc), loc);                                  \
    if constexpr (!detail::elem_info<E>::is_ptr) r = detail::cast(r, detail::elem_info<E>::dtype, loc); \
    detail::slot_set(a.t.slot_, r);                                                                   \
    return a.t;                                                                                       \
  }

  TL_COMPOUND_OPERATOR(+=, detail::BinCat::Add, ir::OpKind::Add, "add")
  TL_COMPOUND_OPERATOR(-=, detail::BinCat::Sub, ir::OpKind::Sub, "sub")
  TL_COMPOUND_OPERATOR(*=, detail::BinCat::Arith, ir::OpKind::Mul, "mul")
  TL_COMPOUND_OPERATOR(/=, detail::BinCat::DivRem, ir::OpKind::Div, "div")
  TL_COMPOUND_OPERATOR(%=, detail::BinCat::DivRem, ir::OpKind::Rem, "rem")
  TL_COMPOUND_OPERATOR(&=, detail::BinCat::Bitwise, ir::OpKind::And, "and")
  TL_COMPOUND_OPERATOR(|=, detail::BinCat::Bitwise, ir::OpKind::Or, "or")
  TL_COMPOUND_OPERATOR(^=, detail::BinCat::Bitwise, ir::OpKind::Xor, "xor")
  TL_COMPOUND_OPERATOR(<<=, detail::BinCat::Bitwise, ir::OpKind::Shl, "shl")
  TL_COMPOUND_OPERATOR(>>=, detail::BinCat::Bitwise, ir::OpKind::Shr, "shr")
#undef TL_COMPOUND_OPERATOR

  // Unary operators.
  friend tile operator-(detail::located<E> a)
    requires(!detail::elem_info<E>::is_ptr)
  {
    return tile(detail::unary(ir::OpKind::Neg, "neg", a.t.value(), a.loc()));
  }
  friend tile operator+(detail::located<E> a) { return tile(a.t.value()); }
  friend tile operator~(detail::located<E> a)
    requires(is_int(detail::elem_info<E>::dtype) && !detail::elem_info<E>::is_ptr)
  {
    return tile(detail::unary(ir::OpKind::Not, "not", a.t.value(), a.loc()));
  }
  // Logical not: on bool tiles `not`; on numbers `x == 0`.
  friend tile<bool> operator!(detail::located<E> a)
    requires(!detail::elem_info<E>::is_ptr)
  {
    return tile<bool>(detail::logical_not(a.t.value(), a.loc()));
  }

 private:
  detail::SlotId slot_ = detail::kNoSlot;
};

}  // namespace tl

#pragma GCC visibility pop
