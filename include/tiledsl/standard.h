// Triton's standard library (triton/language/standard.py) as compositions
// of the existing ops: flip, sort, topk, cat, interleave, ravel, xor_sum
// and swizzle2d; and histogram and gather, which Triton has as ops, here
// one-hot comparisons summed (for tiles of up to a few thousand elements
// times bins or positions: the comparison tile is their product). Nothing here is a new Tile IR op: each function traces to
// reshape / permute / split / join / arange / cmp / select (and reduce for
// xor_sum), so the interpreter and every GPU target run them as they run
// those ops, and the IR dump shows the network they build.
//
// Triton builds its bitonic networks by reshaping a tile to a hypercube
// [2, 2, ..., 2] and swapping along one size-2 dimension at a time. Tiles
// here have rank at most 5, so the networks use a rank-3 view instead:
// along dimension `axis` (size n), the elements at positions p and p + s
// (bit s of p clear) are the two halves of
//
//   x -> reshape [outer * n / (2s), 2, s * inner] -> permute {0, 2, 1} -> split
//
// (outer and inner: the products of the dimensions before and after
// `axis`); join, permute and reshape put them back. That works on any axis
// of a tile of rank 1 to 5, where Triton's sort and topk take the last one.
//
// Every error is a tl::Error naming the caller's line, the function, what
// it expected and what it found.
#pragma once
// The libraries are built with hidden visibility; what this header declares
// is their interface (CMakeLists.txt: "Exported symbols").
#pragma GCC visibility push(default)

#include <cstdint>
#include <optional>
#include <source_location>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "tiledsl/math.h"
#include "tiledsl/reduction.h"
#include "tiledsl/shape.h"
#include "tiledsl/creation.h"
#include "tiledsl/tile.h"

namespace tl {

namespace detail {

inline int64_t numel_of(const Shape& s) {
  int64_t n = 1;
  for (auto d : s) n *= d;
  return n;
}
inline int log2_of(int64_t n) {
  int k = 0;
  while ((int64_t(1) << k) < n) ++k;
  return k;
}

// Rank 1..max_tile_rank and the axis normalized, or an error naming `op`.
inline int std_axis(Value* x, int axis, const ir::Loc& loc, std::string_view op) {
  ir::Type t = type_of(x);
  if (t.is_scalar()) fail(loc, op, "expected a tile of rank 1 to " + std::to_string(max_tile_rank) + ", found " + t.str());
  return normalize_axis(axis, t.rank(), loc, op);
}

// std_axis, for the functions that halve the axis again and again (flip,
// sort, topk): its size a power of two, as Triton's, or an error naming
// `op` (a tile dim may be 3 x 2^k, which no halving reaches).
inline int std_pow2_axis(Value* x, int axis, const ir::Loc& loc, std::string_view op) {
  int a = std_axis(x, axis, loc, op);
  int64_t n = type_of(x).shape[size_t(a)];
  if (n & (n - 1))
    fail(loc, op,
         "expected a power-of-two size along axis " + std::to_string(a) + ", found " + std::to_string(n) + " (" +
             type_of(x).str() + ")");
  return a;
}

// Positions p and p + s (bit s of p clear) along `axis` of a tile of
// `shape`, each half as a [rows, cols] tile: rows = outer * n / (2s),
// cols = s * inner, in x's row-major order.
struct PairView {
  Shape shape;
  int64_t rows = 0, cols = 0;
};
inline PairView pair_view(const Shape& shape, int axis, int64_t s) {
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= shape[size_t(d)];
  for (size_t d = size_t(axis) + 1; d < shape.size(); ++d) inner *= shape[d];
  return {shape, outer * (shape[size_t(axis)] / (2 * s)), s * inner};
}
inline std::pair<Value*, Value*> pair_split(Value* x, const PairView& v, const ir::Loc& loc) {
  Value* y;
  if (v.cols == 1) {
    y = reshape(x, {v.rows, 1, 2}, loc);                   // [rows, 1, 2]
  } else {
    y = reshape(x, {v.rows, 2, v.cols}, loc);              // [rows, 2, cols]
    y = permute(y, {0, 2, 1}, loc, "permute");             // [rows, cols, 2]
  }
  return split(y, loc);                                    // [rows, cols] each
}
inline Value* pair_join(Value* lo, Value* hi, const PairView& v, const ir::Loc& loc) {
  Value* y = join(lo, hi, loc);                            // [rows, cols, 2]
  if (v.cols != 1) y = permute(y, {0, 2, 1}, loc, "permute");  // [rows, 2, cols]
  return reshape(y, v.shape, loc);
}

// a > b in the order sort and topk use: numbers as usual, and for floats
// NaN above everything (+inf included), as numpy and torch sort. -0.0 and
// +0.0 are equal. Both operands one type.
inline Value* sort_greater(Value* a, Value* b, const ir::Loc& loc, std::string_view op) {
  Value* gt = binary(BinCat::Compare, ir::OpKind::Cmp, op, Operand(a), Operand(b), loc, "gt");
  if (!is_float(type_of(a).dtype)) return gt;
  Value* a_nan = binary(BinCat::Compare, ir::OpKind::Cmp, op, Operand(a), Operand(a), loc, "ne");
  Value* b_num = binary(BinCat::Compare, ir::OpKind::Cmp, op, Operand(b), Operand(b), loc, "eq");
  Value* nan_over_num = binary(BinCat::Bitwise, ir::OpKind::And, op, Operand(a_nan), Operand(b_num), loc);
  return binary(BinCat::Bitwise, ir::OpKind::Or, op, Operand(gt), Operand(nan_over_num), loc);
}

// One compare-and-swap column of a bitonic network: the pairs at distance
// `s` along `axis`, each put in ascending order, or descending where
// `descending` (a [rows, 1] bool tile, or a constant when null: `desc`).
inline Value* compare_swap(Value* x, int axis, int64_t s, Value* descending, bool desc, const ir::Loc& loc,
                           std::string_view op) {
  PairView v = pair_view(type_of(x).shape, axis, s);
  auto [lo, hi] = pair_split(x, v, loc);
  Value* swap;
  if (descending)
    swap = binary(BinCat::Bitwise, ir::OpKind::Xor, op, Operand(sort_greater(lo, hi, loc, op)), Operand(descending),
                  loc);
  else
    swap = desc ? sort_greater(hi, lo, loc, op) : sort_greater(lo, hi, loc, op);  // [rows, cols] bool
  Value* new_lo = select(Operand(swap), Operand(hi), Operand(lo), loc);
  Value* new_hi = select(Operand(swap), Operand(lo), Operand(hi), loc);
  return pair_join(new_lo, new_hi, v, loc);
}

// Bitonic merge of the blocks of 2^stage elements along `axis`, each a
// bitonic sequence, into sorted blocks: ascending, descending, or (when
// `alternating`) ascending and descending in turn (bit `stage` of the
// position), so that the next stage finds bitonic blocks twice as long.
inline Value* bitonic_merge(Value* x, int axis, int stage, bool alternating, bool desc, const ir::Loc& loc,
                            std::string_view op) {
  for (int i = stage - 1; i >= 0; --i) {
    int64_t s = int64_t(1) << i;
    Value* flip = nullptr;
    if (alternating) {
      // The direction bit is bit `stage` of the position, which, with the
      // pairs at distance s < 2^stage, is bit stage - log2(2s) of the row.
      PairView v = pair_view(type_of(x).shape, axis, s);
      Value* r = arange(0, v.rows, loc);                                                   // [rows] i32
      r = binary(BinCat::Bitwise, ir::OpKind::Shr, op, Operand(r), Operand::number(stage - i - 1), loc);
      r = binary(BinCat::Bitwise, ir::OpKind::And, op, Operand(r), Operand::number(1), loc);
      flip = binary(BinCat::Compare, ir::OpKind::Cmp, op, Operand(r), Operand::number(0), loc, "ne");
      flip = expand_dims(flip, 1, loc);                                                    // [rows, 1] bool
    }
    x = compare_swap(x, axis, s, flip, desc, loc, op);
  }
  return x;
}

}  // namespace detail

// x reversed along `axis` (Triton's flip; default the last dimension).
// Any element type, pointers too: the elements move, nothing is computed.
template <class E>
tile<E> flip(const tile<E>& x, int axis = -1, std::source_location w = std::source_location::current()) {
  ir::Loc loc = detail::to_loc(w);
  int a = detail::std_pow2_axis(x.value(), axis, loc, "flip");
  detail::Value* v = x.value();
  // Swapping the halves of every block of 2s elements, for each s, reverses the order.
  for (int64_t s = x.shape()[size_t(a)] / 2; s >= 1; s /= 2) {
    detail::PairView pv = detail::pair_view(x.shape(), a, s);
    auto [lo, hi] = detail::pair_split(v, pv, loc);
    v = detail::pair_join(hi, lo, pv, loc);
  }
  return tile<E>(v);
}

// x sorted along `axis` (Triton's sort; default the last dimension), by a
// bitonic network of log2(n) (log2(n) + 1) / 2 compare-and-swap steps. Floats:
// NaN sorts above +inf (last ascending, first descending); -0.0 and +0.0
// are equal, so their order among themselves is unspecified.
template <class E>
  requires(!detail::elem_info<E>::is_ptr && detail::elem_info<E>::dtype != DType::i1)
tile<E> sort(const tile<E>& x, int axis = -1, bool descending = false,
             std::source_location w = std::source_location::current()) {
  ir::Loc loc = detail::to_loc(w);
  int a = detail::std_pow2_axis(x.value(), axis, loc, "sort");
  int log_n = detail::log2_of(x.shape()[size_t(a)]);
  detail::Value* v = x.value();
  for (int stage = 1; stage <= log_n; ++stage)
    v = detail::bitonic_merge(v, a, stage, stage < log_n, descending, loc, "sort");
  return tile<E>(v);
}

// The k largest elements along `axis` (default the last dimension), in
// descending order: the result has k there (Triton's topk). k is a power
// of two from 1 to that dimension's size. Sorts blocks of k, then halves
// the tile log2(n / k) times, keeping the larger of each pair of blocks
// and merging it back into order (bitonic top-k). Floats order as in sort
// (NaN largest).
template <class E>
  requires(!detail::elem_info<E>::is_ptr && detail::elem_info<E>::dtype != DType::i1)
tile<E> topk(const tile<E>& x, int k, int axis = -1, std::source_location w = std::source_location::current()) {
  ir::Loc loc = detail::to_loc(w);
  int a = detail::std_pow2_axis(x.value(), axis, loc, "topk");
  int64_t n = x.shape()[size_t(a)];
  if (k < 1 || k > n || (k & (k - 1)))
    detail::fail(loc, "topk",
                 "expected k a power of two from 1 to " + std::to_string(n) + " (dim " + std::to_string(a) + " of " +
                     x.type().str() + "), found " + std::to_string(k));
  int log_n = detail::log2_of(n), log_k = detail::log2_of(k);
  detail::Value* v = x.value();
  // Blocks of k sorted, ascending and descending in turn (descending when k == n).
  for (int stage = 1; stage <= log_k; ++stage)
    v = detail::bitonic_merge(v, a, stage, stage < log_n, true, loc, "topk");
  for (int i = log_k + 1; i <= log_n; ++i) {
    // The larger of each pair of elements k apart: of an ascending block and
    // the descending one after it, a bitonic block holding their top k.
    detail::PairView pv = detail::pair_view(detail::type_of(v).shape, a, k);
    auto [lo, hi] = detail::pair_split(v, pv, loc);
    detail::Value* keep = detail::select(detail::Operand(detail::sort_greater(hi, lo, loc, "topk")),
                                         detail::Operand(hi), detail::Operand(lo), loc);  // [rows, k * inner]
    detail::Shape half = pv.shape;
    half[size_t(a)] /= 2;
    v = detail::reshape(keep, half, loc);
    v = detail::bitonic_merge(v, a, log_k, i < log_n, true, loc, "topk");
  }
  return tile<E>(v);
}

// a and b (one shape) concatenated along `axis`: the result has twice
// a's size there, a's elements first. (Triton's cat is 1-D and may reorder
// unless can_reorder; this one keeps the order, on any axis.)
template <class E>
tile<E> cat(const tile<E>& a, const tile<E>& b, int axis = 0, std::source_location w = std::source_location::current()) {
  ir::Loc loc = detail::to_loc(w);
  int ax = detail::std_axis(a.value(), axis, loc, "cat");
  if (a.shape() != b.shape())
    detail::fail(loc, "cat", "expected two tiles of one shape, found " + a.type().str() + " and " + b.type().str());
  detail::Shape s = a.shape();
  int64_t outer = 1;
  for (int d = 0; d < ax; ++d) outer *= s[size_t(d)];
  int64_t m = detail::numel_of(s) / outer;
  // Each of the `outer` rows of [outer, m] holds a's part, then b's.
  detail::Value* j = detail::join(detail::reshape(a.value(), {outer, m}, loc), detail::reshape(b.value(), {outer, m}, loc),
                                  loc);                             // [outer, m, 2]
  j = detail::permute(j, {0, 2, 1}, loc, "cat");                    // [outer, 2, m]
  s[size_t(ax)] *= 2;
  return tile<E>(detail::reshape(j, s, loc));
}

// a and b (one shape [.., n]) interleaved along the last dimension:
// [.., 2n] holding a0, b0, a1, b1, ... (Triton's interleave). Scalars give [2].
template <class E>
tile<E> interleave(const tile<E>& a, const tile<E>& b, std::source_location w = std::source_location::current()) {
  ir::Loc loc = detail::to_loc(w);
  if (a.shape() != b.shape())
    detail::fail(loc, "interleave",
                 "expected two tiles of one shape, found " + a.type().str() + " and " + b.type().str());
  if (a.rank() == 0) return tile<E>(detail::join(a.value(), b.value(), loc));
  detail::Shape s = a.shape();
  int64_t n = s.back(), rows = detail::numel_of(s) / n;
  detail::Value* j = detail::join(detail::reshape(a.value(), {rows, n}, loc), detail::reshape(b.value(), {rows, n}, loc),
                                  loc);  // [rows, n, 2]
  s.back() *= 2;
  return tile<E>(detail::reshape(j, s, loc));
}

// x as a 1-D tile in row-major order (Triton's ravel; a scalar gives [1]).
template <class E>
tile<E> ravel(const tile<E>& x, std::source_location w = std::source_location::current()) {
  return tile<E>(detail::reshape(x.value(), {detail::numel_of(x.shape())}, detail::to_loc(w)));
}

// The xor of the elements along `axis` (Triton's xor_sum); integers only.
template <class E>
  requires(!detail::elem_info<E>::is_ptr && is_int(detail::elem_info<E>::dtype))
tile<E> xor_sum(const tile<E>& x, int axis, std::source_location w = std::source_location::current()) {
  return reduce(x, axis, [](tile<E> p, tile<E> q) { return p ^ q; }, w);
}

// Triton's swizzle2d: maps (i, j) in a size_i x size_j grid of tiles to
// the (i, j) visited when the grid is walked in groups of size_g rows,
// column by column inside a group (better L2 reuse for a GEMM's program
// ids). i and j are integer tiles (or one of them a C++ integer); the
// sizes integer scalars or C++ integers. All values are non-negative, so
// C++'s truncating / and % are Python's // and %.
template <class I, class J, class SI, class SJ, class SG>
  requires(detail::binary_ok<detail::BinCat::DivRem, I, J> && detail::binary_ok<detail::BinCat::DivRem, I, SI> &&
           detail::binary_ok<detail::BinCat::DivRem, I, SJ> && detail::binary_ok<detail::BinCat::DivRem, I, SG> &&
           (detail::operand_of<I>::desc.is_tile || detail::operand_of<J>::desc.is_tile))
std::pair<tile<detail::binary_elem_t<detail::BinCat::DivRem, I, J>>, tile<detail::binary_elem_t<detail::BinCat::DivRem, I, J>>>
swizzle2d(const I& i, const J& j, const SI& size_i, const SJ& size_j, const SG& size_g,
          std::source_location w = std::source_location::current()) {
  using R = tile<detail::binary_elem_t<detail::BinCat::DivRem, I, J>>;
  static_assert(is_int(detail::elem_info<typename R::element_type>::dtype), "tl::swizzle2d takes integer indices");
  ir::Loc loc = detail::to_loc(w);
  using detail::BinCat;
  using detail::Operand;
  using ir::OpKind;
  DType d = detail::elem_info<typename R::element_type>::dtype;
  auto op = [&](BinCat c, OpKind k, const Operand& a, const Operand& b) {
    return Operand(detail::binary(c, k, "swizzle2d", a, b, loc));
  };
  // Every operand traced (a C++ integer as a constant of the result type),
  // so that no step combines two C++ numbers.
  auto traced = [&](const auto& x) {
    Operand o = detail::operand(x);
    return o.is_literal() ? Operand(detail::constant(o, d, {}, loc, "swizzle2d")) : o;
  };
  Operand si = traced(size_i), sj = traced(size_j), sg = traced(size_g);
  Operand ij = op(BinCat::Add, OpKind::Add, op(BinCat::Arith, OpKind::Mul, traced(i), sj), traced(j));  // i * size_j + j
  Operand size_gj = op(BinCat::Arith, OpKind::Mul, sg, sj);
  Operand group = op(BinCat::DivRem, OpKind::Div, ij, size_gj);             // the group of (i, j)
  Operand off_i = op(BinCat::Arith, OpKind::Mul, group, sg);                // its first row
  Operand rows = op(BinCat::Arith, OpKind::Minimum, op(BinCat::Sub, OpKind::Sub, si, off_i), sg);  // the last group may be shorter
  ij = op(BinCat::DivRem, OpKind::Rem, ij, size_gj);                        // index inside the group
  Operand new_i = op(BinCat::Add, OpKind::Add, off_i, op(BinCat::DivRem, OpKind::Rem, ij, rows));
  Operand new_j = op(BinCat::DivRem, OpKind::Div, ij, rows);
  return {R(detail::cast(new_i.value, d, loc, "swizzle2d")), R(detail::cast(new_j.value, d, loc, "swizzle2d"))};
}

// Counts of `x`'s values in bins 0 .. num_bins - 1 (values outside, or
// masked off, not counted): x a 1-D integer tile, num_bins a power of two;
// a [num_bins] i32 tile. A [N, num_bins] comparison summed over N.
template <class E>
tile<int32_t> histogram(const tile<E>& x, int64_t num_bins, std::source_location w = std::source_location::current()) {
  static_assert(is_int(detail::elem_info<E>::dtype) && !std::is_same_v<E, bool>, "tl::histogram counts integer values");
  ir::Loc loc = detail::to_loc(w);
  if (x.type().rank() != 1) detail::fail(loc, "histogram", "expected a 1-D tile of values, found " + x.type().str());
  if (num_bins < 1 || (num_bins & (num_bins - 1)))
    detail::fail(loc, "histogram", "expected a number of bins that is a power of two, found " + std::to_string(num_bins));
  auto bins = cast<int64_t>(arange(0, num_bins, w), w);                            // [B] i64
  auto hit = col(cast<int64_t>(x, w), w) == row(bins, w);                          // [N, B] i1
  return sum(cast<int32_t>(hit, w), 0, w);                                         // [B] i32
}
template <class E>
tile<int32_t> histogram(const tile<E>& x, int64_t num_bins, const tile<bool>& mask,
                        std::source_location w = std::source_location::current()) {
  ir::Loc loc = detail::to_loc(w);
  if (mask.type().shape != x.type().shape)
    detail::fail(loc, "histogram", "expected a mask of the values' shape " + x.type().str() + ", found " + mask.type().str());
  // A masked-off value counts as -1: outside every bin.
  return histogram(where(mask, cast<int64_t>(x, w), int64_t(-1)), num_bins, w);
}

namespace detail {
// The integer type of E's width (bits moved exactly, NaN and -0.0 kept).
template <class E>
using same_width_int_t =
    std::conditional_t<bit_width(elem_info<E>::dtype) == 64, int64_t,
                       std::conditional_t<bit_width(elem_info<E>::dtype) == 32, int32_t,
                                          std::conditional_t<bit_width(elem_info<E>::dtype) == 16, int16_t, int8_t>>>;
}  // namespace detail

// out = src gathered along `axis` at `index` (Triton's gather): index has
// src's rank (1 or 2) and its sizes but along `axis`; out has index's
// shape; rank 1: out[k] = src[index[k]]; axis 1: out[m][k] = src[m][index[m][k]];
// axis 0: out[k][n] = src[index[k][n]][n]. An index outside 0 .. n - 1
// gathers 0 (Triton leaves it undefined). Each element's bits are moved
// exactly: a one-hot [.., K, N] selection of src's bits, summed.
template <class E, class I>
tile<E> gather(const tile<E>& src, const tile<I>& index, int axis, std::source_location w = std::source_location::current()) {
  static_assert(!detail::elem_info<E>::is_ptr && !std::is_same_v<E, bool>, "tl::gather moves numbers (cast bools to an integer)");
  static_assert(is_int(detail::elem_info<I>::dtype) && !std::is_same_v<I, bool>, "tl::gather takes integer indices");
  ir::Loc loc = detail::to_loc(w);
  const auto &ss = src.type().shape, &is = index.type().shape;
  if (src.type().is_scalar() || ss.size() > 2 || is.size() != ss.size())
    detail::fail(loc, "gather", "expected a source of rank 1 or 2 and an index of the same rank, found " +
                                    src.type().str() + " and " + index.type().str());
  int ax = detail::normalize_axis(axis, int(ss.size()), loc, "gather");
  for (size_t d = 0; d < ss.size(); ++d)
    if (int(d) != ax && ss[d] != is[d])
      detail::fail(loc, "gather", "expected an index of the source's sizes but along axis " + std::to_string(ax) +
                                      ", found " + src.type().str() + " and " + index.type().str());
  using U = detail::same_width_int_t<E>;
  const int64_t n = ss[size_t(ax)];
  auto bits = bitcast<U>(src, w);                                                 // src's shape, U
  auto idx = cast<int64_t>(index, w);                                             // index's shape, i64
  auto pos = cast<int64_t>(arange(0, n, w), w);                                   // [n] i64
  // The element of `v` where `at` equals `pos`, else 0; both ops the
  // caller's (recorded at its line, as every op here).
  auto pick = [&](const tile<int64_t>& at, const tile<int64_t>& pos_, const tile<U>& v) {
    return where(detail::located<bool>(detail::located<int64_t>(at, w) == pos_, w), v, U(0));
  };
  tile<U> picked = [&] {
    if (ss.size() == 1)  // [K, n]
      return cast<U>(sum(pick(col(idx, w), row(pos, w), row(bits, w)), 1, w), w);
    if (ax == 1)         // [M, K, n]
      return cast<U>(sum(pick(expand_dims(idx, 2, w), reshape(pos, {1, 1, n}, w), expand_dims(bits, 1, w)), 2, w), w);
    // [K, M, N]
    return cast<U>(sum(pick(expand_dims(idx, 1, w), reshape(pos, {1, n, 1}, w), expand_dims(bits, 0, w)), 1, w), w);
  }();
  return bitcast<E>(picked, w);
}

// ---- Triton's options on existing functions (issue 17) ----

// dtype= of sum and cumsum: the input cast to T and accumulated in T, with
// no widening (an i8 sum wraps in i8; a bf16 sum rounds each partial sum to
// bf16): tl::sum(x, 1, tl::dtype<double>), tl::cumsum(x, 0, tl::dtype<int64_t>).
template <class T>
struct dtype_tag {};
template <class T>
inline constexpr dtype_tag<T> dtype{};

template <class T, class E>
  requires(!detail::elem_info<E>::is_ptr && !detail::elem_info<T>::is_ptr)
tile<T> sum(const tile<E>& x, int axis, dtype_tag<T>, std::source_location w = std::source_location::current()) {
  return reduce(cast<T>(x, w), axis, [](const tile<T>& a, const tile<T>& b) { return tile<T>(a + b); }, w);
}
template <class T, class E>
  requires(!detail::elem_info<E>::is_ptr && !detail::elem_info<T>::is_ptr)
tile<T> cumsum(const tile<E>& x, int axis, bool reverse, dtype_tag<T>,
               std::source_location w = std::source_location::current()) {
  return associative_scan(cast<T>(x, w), axis, [](const tile<T>& a, const tile<T>& b) { return tile<T>(a + b); },
                          reverse, w);
}
template <class T, class E>
  requires(!detail::elem_info<E>::is_ptr && !detail::elem_info<T>::is_ptr)
tile<T> cumsum(const tile<E>& x, int axis, dtype_tag<T> t, std::source_location w = std::source_location::current()) {
  return cumsum(x, axis, false, t, w);
}

// out_dtype of dot: the product accumulated as without it (f32 for float
// inputs, i32 for i8) and the result cast to T once. Triton accumulates in
// T on the tensor cores (an f16 out_dtype sums in f16); here only the final
// sum is rounded, so results are as precise or more.
template <class T, class E>
  requires(!detail::elem_info<E>::is_ptr && !detail::elem_info<T>::is_ptr)
tile<T> dot(const tile<E>& a, const tile<E>& b, dtype_tag<T>, const DotOptions& opts = {},
            std::source_location w = std::source_location::current()) {
  return cast<T>(dot(a, b, opts, w), w);
}

// ---- dot_scaled: Triton's product of microscaled operands ----
//
// tl::dot_scaled(lhs, lhs_scale, "e2m1", rhs, rhs_scale, "e4m3"[, acc]):
// (lhs * 2^(lhs_scale - 127)) x (rhs * 2^(rhs_scale - 127)) [+ acc], f32.
//   lhs     [M, K]; "e2m1" (fp4): u8 [M, K/2], two values a byte along K,
//           the first in the low nibble; "e4m3" / "e5m2": u8 bits or
//           f8e4m3 / f8e5m2 [M, K]; "bf16" / "fp16": bf16 / f16 [M, K].
//   rhs     [K, N]; "e2m1": u8 [K/2, N], packed along K likewise.
//   scales  u8 (e8m0) [M, K/32] for lhs, [N, K/32] for rhs, one per 32
//           values along K; 255 is NaN. std::nullopt: no scale (1).
// As Triton does on GPUs without microscaled tensor cores (Hopper, Ampere,
// AMD), the operands are decoded and scaled into bf16 (both in f16 when
// both are "fp16" without scales) and multiplied by an ordinary dot: the
// decoded values and power-of-two scales are exact in bf16 unless they
// leave its range. Not supported: Triton's lhs_k_pack / rhs_k_pack = false
// (fp4 packed along M or N) and fast_math (NaN scales are always honoured).
namespace detail {

// Bits of the f32 value of fp4 (e2m1) codes 0..15 held in i32:
// sign | exponent (bias 1) | one mantissa bit; codes 0 and 8 are +-0 and
// exponent 0 with the mantissa bit is 0.5.
inline tile<int32_t> e2m1_to_f32_bits(const tile<int32_t>& c, std::source_location w) {
  tile<int32_t> sign = (c >> 3) << 31, e = (c >> 1) & 3, m = c & 1;
  tile<int32_t> normal = ((e + 126) << 23) | (m << 22);
  return sign | tl::where(located<bool>(e == 0, w), m * 0x3F000000, normal);
}

// The f32 values of an operand in `format`; e2m1 is unpacked along axis
// `k_axis` (1 for lhs, 0 for rhs).
template <class E>
tile<float> mx_decode(const tile<E>& x, std::string_view format, int k_axis, const ir::Loc& loc,
                      std::source_location w) {
  auto bad = [&](std::string_view want) -> tile<float> {
    fail(loc, "dot_scaled",
         "expected " + std::string(want) + " for format \"" + std::string(format) + "\", found " + x.type().str());
  };
  if (format == "e2m1" || format == "e4m3" || format == "e5m2") {
    if constexpr (std::is_same_v<E, uint8_t>) {
      if (format == "e4m3") return tl::cast<float>(tl::bitcast<f8e4m3>(x, w), w);
      if (format == "e5m2") return tl::cast<float>(tl::bitcast<f8e5m2>(x, w), w);
      tile<int32_t> byte = tl::cast<int32_t>(x, w);
      tile<float> lo = tl::bitcast<float>(e2m1_to_f32_bits(byte & 15, w), w), hi = tl::bitcast<float>(e2m1_to_f32_bits(byte >> 4, w), w);
      if (k_axis == 1) return tl::interleave(lo, hi, w);                 // [M, K]
      return tl::trans(tl::interleave(tl::trans(lo, w), tl::trans(hi, w), w), w);    // [K, N]
    } else if constexpr (std::is_same_v<E, f8e4m3>) {
      if (format == "e4m3") return tl::cast<float>(x, w);
      return bad("a u8 tile");
    } else if constexpr (std::is_same_v<E, f8e5m2>) {
      if (format == "e5m2") return tl::cast<float>(x, w);
      return bad("a u8 tile");
    } else {
      return bad(format == "e2m1" ? "a u8 tile" : "a u8 or f8 tile");
    }
  }
  if (format == "bf16") {
    if constexpr (std::is_same_v<E, bf16>) return tl::cast<float>(x, w);
    return bad("a bf16 tile");
  }
  if (format == "fp16") {
    if constexpr (std::is_same_v<E, f16>) return tl::cast<float>(x, w);
    return bad("an f16 tile");
  }
  fail(loc, "dot_scaled", "expected a format e2m1, e4m3, e5m2, bf16 or fp16, found \"" + std::string(format) + "\"");
}

// 2^(s - 127) for e8m0 scales s [R, G] (255: NaN), spread over the 32
// values each covers: [R, 32 G].
inline tile<float> mx_scales(const tile<uint8_t>& s, std::source_location w) {
  tile<int32_t> e = tl::cast<int32_t>(s, w);
  tile<int32_t> bits =
      tl::where(located<bool>(e == 255, w), 0x7FC00000, tl::where(located<bool>(e == 0, w), 0x00400000, e << 23));
  tile<float> f = tl::bitcast<float>(bits, w);                          // [R, G]
  const int64_t rows = s.shape()[0], groups = s.shape()[1];
  return tl::reshape(tl::broadcast_to(tl::expand_dims(f, 2, w), {rows, groups, 32}, w), {rows, groups * 32}, w);  // [R, 32 G]
}

template <class A, class B>
Value* dot_scaled(const tile<A>& lhs, const std::optional<tile<uint8_t>>& lhs_scale, std::string_view lhs_format,
                  const tile<B>& rhs, const std::optional<tile<uint8_t>>& rhs_scale, std::string_view rhs_format,
                  Value* acc, std::source_location w) {
  const ir::Loc loc = to_loc(w);
  if (lhs.rank() != 2 || rhs.rank() != 2)
    fail(loc, "dot_scaled", "expected 2-D operands, found " + lhs.type().str() + " and " + rhs.type().str());
  tile<float> a = mx_decode(lhs, lhs_format, 1, loc, w);    // [M, K]
  tile<float> b = mx_decode(rhs, rhs_format, 0, loc, w);    // [K, N]
  const int64_t M = a.shape()[0], K = a.shape()[1], N = b.shape()[1];
  if (b.shape()[0] != K)
    fail(loc, "dot_scaled", "expected rhs to have K = " + std::to_string(K) + " rows (from lhs " + lhs.type().str() +
                                " as " + std::string(lhs_format) + "), found " + rhs.type().str() + " as " +
                                std::string(rhs_format));
  auto scaled = [&](tile<float> x, const std::optional<tile<uint8_t>>& s, int64_t rows, const char* side,
                    bool transposed) {
    if (!s) return x;
    const Shape want{rows, K / 32};
    if (K % 32 != 0 || s->shape() != want)
      fail(loc, "dot_scaled",
           std::string("expected ") + side + "_scale of shape [" + std::to_string(rows) + ", " + std::to_string(K / 32) +
               "] (one scale per 32 values along K = " + std::to_string(K) + (K % 32 ? ", a multiple of 32" : "") +
               "), found " + s->type().str());
    tile<float> f = mx_scales(*s, w);                            // [rows, K]
    return transposed ? tile<float>(x * tl::trans(f, w)) : tile<float>(x * f);
  };
  a = scaled(a, lhs_scale, M, "lhs", false);
  b = scaled(b, rhs_scale, N, "rhs", true);
  const bool half = lhs_format == "fp16" && rhs_format == "fp16" && !lhs_scale && !rhs_scale;
  if (half) return dot(tl::cast<f16>(a, w).value(), tl::cast<f16>(b, w).value(), acc, "tf32", loc);
  return dot(tl::cast<bf16>(a, w).value(), tl::cast<bf16>(b, w).value(), acc, "tf32", loc);
}

}  // namespace detail

template <class A, class B>
tile<float> dot_scaled(const tile<A>& lhs, const std::optional<tile<uint8_t>>& lhs_scale, std::string_view lhs_format,
                       const tile<B>& rhs, const std::optional<tile<uint8_t>>& rhs_scale, std::string_view rhs_format,
                       std::source_location w = std::source_location::current()) {
  return tile<float>(detail::dot_scaled(lhs, lhs_scale, lhs_format, rhs, rhs_scale, rhs_format, nullptr, w));
}
template <class A, class B>
tile<float> dot_scaled(const tile<A>& lhs, const std::optional<tile<uint8_t>>& lhs_scale, std::string_view lhs_format,
                       const tile<B>& rhs, const std::optional<tile<uint8_t>>& rhs_scale, std::string_view rhs_format,
                       const tile<float>& acc, std::source_location w = std::source_location::current()) {
  return tile<float>(detail::dot_scaled(lhs, lhs_scale, lhs_format, rhs, rhs_scale, rhs_format, acc.value(), w));
}

// tie_break_left of argmax and argmin: false lets the highest index win
// ties (true, the default, is the plain argmax / argmin: the lowest).
struct ArgOptions {
  bool tie_break_left = true;
};

namespace detail {
template <class E>
tile<int32_t> arg_pick(const tile<E>& x, int axis, bool is_max, const ArgOptions& o, std::source_location w) {
  if (o.tie_break_left) return is_max ? tl::argmax(x, axis, w) : tl::argmin(x, axis, w);
  ir::Loc loc = to_loc(w);
  const auto& shape = x.type().shape;
  if (x.type().is_scalar()) fail(loc, is_max ? "argmax" : "argmin", "expected a tile, found " + x.type().str());
  int ax = normalize_axis(axis, int(shape.size()), loc, is_max ? "argmax" : "argmin");
  std::vector<int64_t> line(shape.size(), 1);  // [1, .., n, .., 1]
  line[size_t(ax)] = shape[size_t(ax)];
  auto at = tl::broadcast_to(tl::reshape(tl::arange(0, shape[size_t(ax)], w), line, w), shape, w);  // x's shape, i32
  auto [best, index] = tl::reduce(
      std::make_tuple(x, at), ax,
      [is_max](auto a, auto b) {
        auto [va, ia] = a;
        auto [vb, ib] = b;
        auto better = is_max ? (va > vb) : (va < vb);
        auto take_a = better | ((va == vb) & (ia > ib));  // the higher index wins ties
        return std::make_tuple(tl::where(take_a, va, vb), tl::where(take_a, ia, ib));
      },
      w);
  return index;
}
}  // namespace detail

template <class E>
  requires(!detail::elem_info<E>::is_ptr)
tile<int32_t> argmax(const tile<E>& x, int axis, const ArgOptions& o,
                     std::source_location w = std::source_location::current()) {
  return detail::arg_pick(x, axis, true, o, w);
}
template <class E>
  requires(!detail::elem_info<E>::is_ptr)
tile<int32_t> argmin(const tile<E>& x, int axis, const ArgOptions& o,
                     std::source_location w = std::source_location::current()) {
  return detail::arg_pick(x, axis, false, o, w);
}

// propagate_nan of minimum, maximum, min and max: PropagateNan::all makes a
// NaN operand give NaN (none, the default, is the plain form: a NaN loses
// to a number).
enum class PropagateNan { none, all };

namespace detail {
template <class E>
tile<E> nan_or(const tile<E>& a, const tile<E>& b, const tile<E>& r, PropagateNan p, std::source_location w) {
  static_assert(is_float(elem_info<E>::dtype), "propagate_nan: float tiles");
  if (p == PropagateNan::none) return r;
  auto is_nan = [&](const tile<E>& x) { return tile<bool>(located<E>(x, w) != x); };
  // a + b: NaN when either is.
  return tl::where(located<bool>(located<bool>(is_nan(a), w) | is_nan(b), w), tile<E>(located<E>(a, w) + b), r);
}
}  // namespace detail

template <class E>
tile<E> maximum(const tile<E>& a, const tile<E>& b, PropagateNan p,
                std::source_location w = std::source_location::current()) {
  return detail::nan_or(a, b, maximum(a, b, w), p, w);
}
template <class E>
tile<E> minimum(const tile<E>& a, const tile<E>& b, PropagateNan p,
                std::source_location w = std::source_location::current()) {
  return detail::nan_or(a, b, minimum(a, b, w), p, w);
}
// A C++ number on either side takes the tile's type (Triton's
// tl.maximum(x, 0.2, propagate_nan=...)).
template <class E, detail::number N>
tile<E> maximum(const tile<E>& a, N b, PropagateNan p, std::source_location w = std::source_location::current()) {
  return maximum(a, full_like(a, b, w), p, w);
}
template <class E, detail::number N>
tile<E> maximum(N a, const tile<E>& b, PropagateNan p, std::source_location w = std::source_location::current()) {
  return maximum(full_like(b, a, w), b, p, w);
}
template <class E, detail::number N>
tile<E> minimum(const tile<E>& a, N b, PropagateNan p, std::source_location w = std::source_location::current()) {
  return minimum(a, full_like(a, b, w), p, w);
}
template <class E, detail::number N>
tile<E> minimum(N a, const tile<E>& b, PropagateNan p, std::source_location w = std::source_location::current()) {
  return minimum(full_like(b, a, w), b, p, w);
}
template <class E>
tile<E> max(const tile<E>& x, int axis, PropagateNan p, std::source_location w = std::source_location::current()) {
  if (p == PropagateNan::none) return max(x, axis, w);
  return reduce(x, axis, [](const tile<E>& a, const tile<E>& b) { return maximum(a, b, PropagateNan::all); }, w);
}
template <class E>
tile<E> min(const tile<E>& x, int axis, PropagateNan p, std::source_location w = std::source_location::current()) {
  if (p == PropagateNan::none) return min(x, axis, w);
  return reduce(x, axis, [](const tile<E>& a, const tile<E>& b) { return minimum(a, b, PropagateNan::all); }, w);
}

// fp_downcast_rounding of cast: Rounding::rtz rounds a float narrowed to a
// smaller float toward zero (Triton's "rtz"); rtne, the default, is the
// plain cast (to nearest, ties to even). Other conversions ignore it.
enum class Rounding { rtne, rtz };
struct CastOptions {
  Rounding fp_downcast_rounding = Rounding::rtne;
};
// rtz is the nearest result stepped one unit toward zero where it rounded
// away from zero (its magnitude above x's): a decrement of its bits (sign
// and magnitude), which also takes an overflow to infinity back to the
// largest finite value. NaN, infinities, zeros and exact results stay.
template <class T, class E>
tile<T> cast(const tile<E>& x, CastOptions o, std::source_location w = std::source_location::current()) {
  tile<T> y = cast<T>(x, w);
  constexpr DType from = detail::elem_info<E>::dtype, to = detail::elem_info<T>::dtype;
  if constexpr (is_float(from) && is_float(to) && bit_width(to) < bit_width(from)) {
    if (o.fp_downcast_rounding == Rounding::rtz) {
      using I = detail::same_width_int_t<T>;
      auto away = abs(cast<E>(y, w), w) > abs(x, w);                            // x's shape, i1
      auto bits = bitcast<I>(y, w);                                             // x's shape, I
      y = bitcast<T>(where(away, bits - I(1), bits), w);
    }
  }
  return y;
}

// div_rn: the correctly rounded quotient of f32 (or narrower) floats,
// computed in f64 and rounded once more: f64's 53 bits are at least 2 x 24
// + 2, so the second rounding gives the f32 result of one rounding of the
// exact quotient (Figueroa). (`/` on f32 is div.full on NVIDIA, within 2
// ulp, as Triton's.) f64 inputs: their own division, correctly rounded.
// (Triton's sqrt_rn is tl::sqrt, correctly rounded already.)
template <class E>
  requires(is_float(detail::elem_info<E>::dtype))
tile<E> div_rn(const tile<E>& x, const tile<E>& y, std::source_location w = std::source_location::current()) {
  return cast<E>(tile<double>(cast<double>(x, w) / cast<double>(y, w)), w);
}

}  // namespace tl

#pragma GCC visibility pop
