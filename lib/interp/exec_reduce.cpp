// Reductions, scans and the matrix product.
// - reduce combines along the axis in a balanced tree: pairs (0,1), (2,3), …,
//   then pairs of those (what warp shuffles compute). Each tree level runs
//   the combine region once for all its pairs at the same time when the region
//   is purely elementwise ("lane-parallel"), else once per pair.
// - scan is sequential along the axis; each step combines all other positions
//   at once the same way.
// - dot sums exact products in double, starting from the accumulator, and
//   rounds once to the result dtype; i8 products sum exactly in integers.
#include "interp/element.h"
#include "interp/program.h"

namespace tl::interp {

namespace {

// Calls f(dst_storage, src_storage) on the int or float vectors of two slots
// holding the same kind of values.
template <class F>
void both(Slot& dst, const Slot& src, F&& f) {
  if (src.is_float) f(dst.f, src.f);
  else f(dst.i, src.i);
}

// Evaluates the combine region for `lanes` lanes: lhs[j] and rhs[j] hold the
// operands, res[j] receives the combined values.
void combine(Exec& ex, const Instr& in, int64_t lanes, std::vector<Slot>& lhs, std::vector<Slot>& rhs,
             std::vector<Slot>& res) {
  const Block& blk = in.regions[0];
  size_t k = lhs.size();
  if (in.flag) {
    for (size_t j = 0; j < k; ++j) {
      std::swap(ex.slots[size_t(blk.args[j])], lhs[j]);
      std::swap(ex.slots[size_t(blk.args[k + j])], rhs[j]);
    }
    ex.run_block(blk);
    for (size_t j = 0; j < k; ++j) {
      const Slot& y = ex.slots[size_t(blk.yields[j])];
      res[j].resize(lanes);
      int64_t step = y.n == 1 ? 0 : 1;  // a yielded constant covers every lane
      both(res[j], y, [&](auto& d, const auto& s) {
        for (int64_t l = 0; l < lanes; ++l) d[size_t(l)] = s[size_t(l * step)];
      });
      // Give the operand buffers back so their capacity is reused.
      std::swap(ex.slots[size_t(blk.args[j])], lhs[j]);
      std::swap(ex.slots[size_t(blk.args[k + j])], rhs[j]);
    }
    return;
  }
  for (size_t j = 0; j < k; ++j) res[j].resize(lanes);
  for (int64_t l = 0; l < lanes; ++l) {
    for (size_t j = 0; j < k; ++j) {
      Slot& a = ex.slots[size_t(blk.args[j])];
      Slot& b = ex.slots[size_t(blk.args[k + j])];
      a.resize(1);
      b.resize(1);
      both(a, lhs[j], [&](auto& d, const auto& s) { d[0] = s[size_t(l)]; });
      both(b, rhs[j], [&](auto& d, const auto& s) { d[0] = s[size_t(l)]; });
    }
    ex.run_block(blk);
    for (size_t j = 0; j < k; ++j)
      both(res[j], ex.slots[size_t(blk.yields[j])], [&](auto& d, const auto& s) { d[size_t(l)] = s[0]; });
  }
}

// Splits a shape at `axis` into (outer, extent, inner) element counts.
void split_shape(const std::vector<int64_t>& shape, int64_t axis, int64_t& outer, int64_t& extent, int64_t& inner) {
  outer = inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= shape[size_t(d)];
  extent = shape[size_t(axis)];
  for (size_t d = size_t(axis) + 1; d < shape.size(); ++d) inner *= shape[d];
}

std::vector<Slot> slots_like(const Exec& ex, const std::vector<int>& ids) {
  std::vector<Slot> v(ids.size());
  for (size_t j = 0; j < ids.size(); ++j) v[j].is_float = ex.slots[size_t(ids[j])].is_float;
  return v;
}

}  // namespace

void exec_reduce(Exec& ex, const Instr& in) {
  size_t k = in.in.size();
  int64_t outer, width, inner;
  split_shape(ex.type_of(in.in[0]).shape, in.int_attr, outer, width, inner);
  auto cur = slots_like(ex, in.in), next = cur, lhs = cur, rhs = cur, res = cur;
  for (size_t j = 0; j < k; ++j) cur[j].copy_from(ex.slots[size_t(in.in[j])]);
  while (width > 1) {
    int64_t half = width / 2, odd = width % 2, lanes = outer * half * inner;
    for (size_t j = 0; j < k; ++j) {
      lhs[j].resize(lanes);
      rhs[j].resize(lanes);
      both(lhs[j], cur[j], [&](auto& d, const auto& s) {
        auto& d2 = [&]() -> auto& { if constexpr (std::is_same_v<std::decay_t<decltype(d)>, std::vector<double>>) return rhs[j].f; else return rhs[j].i; }();
        for (int64_t o = 0; o < outer; ++o)
          for (int64_t h = 0; h < half; ++h)
            for (int64_t t = 0; t < inner; ++t) {
              size_t lane = size_t((o * half + h) * inner + t);
              d[lane] = s[size_t((o * width + 2 * h) * inner + t)];
              d2[lane] = s[size_t((o * width + 2 * h + 1) * inner + t)];
            }
      });
    }
    combine(ex, in, lanes, lhs, rhs, res);
    int64_t next_width = half + odd;
    for (size_t j = 0; j < k; ++j) {
      next[j].resize(outer * next_width * inner);
      both(next[j], res[j], [&](auto& d, const auto& s) {
        for (int64_t o = 0; o < outer; ++o)
          for (int64_t h = 0; h < half; ++h)
            for (int64_t t = 0; t < inner; ++t)
              d[size_t((o * next_width + h) * inner + t)] = s[size_t((o * half + h) * inner + t)];
      });
      if (odd)  // an unpaired last element moves up a level unchanged
        both(next[j], cur[j], [&](auto& d, const auto& s) {
          for (int64_t o = 0; o < outer; ++o)
            for (int64_t t = 0; t < inner; ++t)
              d[size_t((o * next_width + half) * inner + t)] = s[size_t((o * width + width - 1) * inner + t)];
        });
    }
    std::swap(cur, next);
    width = next_width;
  }
  for (size_t j = 0; j < k; ++j) ex.slots[size_t(in.out[j])].copy_from(cur[j]);
}

void exec_scan(Exec& ex, const Instr& in) {
  size_t k = in.in.size();
  int64_t outer, extent, inner;
  split_shape(ex.type_of(in.in[0]).shape, in.int_attr, outer, extent, inner);
  bool reverse = in.ints.at(0) != 0;
  auto cur = slots_like(ex, in.in), lhs = cur, rhs = cur, res = cur;
  for (size_t j = 0; j < k; ++j) cur[j].copy_from(ex.slots[size_t(in.in[j])]);
  int64_t lanes = outer * inner;
  for (int64_t s = 1; s < extent; ++s) {
    int64_t prev = reverse ? extent - s : s - 1, now = reverse ? extent - 1 - s : s;
    for (size_t j = 0; j < k; ++j) {
      lhs[j].resize(lanes);
      rhs[j].resize(lanes);
      both(lhs[j], cur[j], [&](auto& d, const auto& src) {
        for (int64_t o = 0; o < outer; ++o)
          for (int64_t t = 0; t < inner; ++t) d[size_t(o * inner + t)] = src[size_t((o * extent + prev) * inner + t)];
      });
      both(rhs[j], cur[j], [&](auto& d, const auto& src) {
        for (int64_t o = 0; o < outer; ++o)
          for (int64_t t = 0; t < inner; ++t) d[size_t(o * inner + t)] = src[size_t((o * extent + now) * inner + t)];
      });
    }
    combine(ex, in, lanes, lhs, rhs, res);
    for (size_t j = 0; j < k; ++j)
      both(cur[j], res[j], [&](auto& d, const auto& src) {
        for (int64_t o = 0; o < outer; ++o)
          for (int64_t t = 0; t < inner; ++t) d[size_t((o * extent + now) * inner + t)] = src[size_t(o * inner + t)];
      });
  }
  for (size_t j = 0; j < k; ++j) ex.slots[size_t(in.out[j])].copy_from(cur[j]);
}

void exec_dot(Exec& ex, const Instr& in) {
  const ir::Type& at = ex.type_of(in.in[0]);
  const ir::Type& bt = ex.type_of(in.in[1]);
  const Slot& a = ex.slots[size_t(in.in[0])];
  const Slot& b = ex.slots[size_t(in.in[1])];
  const Slot& c = ex.slots[size_t(in.in[2])];
  Slot& r = ex.slots[size_t(in.out[0])];
  int rank = at.rank();
  int64_t M = at.shape[size_t(rank - 2)], K = at.shape[size_t(rank - 1)], N = bt.shape[size_t(rank - 1)];
  int64_t batch = rank == 3 ? at.shape[0] : 1;
  r.resize(batch * M * N);
  dispatch_dtype(in.out_dtype, [&](auto d) {
    constexpr DType D = decltype(d)::value;
    if constexpr (is_float(D)) {
      // [B, M, K] x [B, K, N] + [B, M, N]; products of f32 (or narrower)
      // values are exact in double.
      const double* ap = a.f.data();
      const double* bp = b.f.data();
      std::vector<double> a_tf32, b_tf32;
      if (in.flag) {  // tf32: round each f32 input to 10 mantissa bits first
        a_tf32.resize(a.f.size());
        b_tf32.resize(b.f.size());
        for (size_t e = 0; e < a_tf32.size(); ++e) a_tf32[e] = round_tf32(a.f[e]);
        for (size_t e = 0; e < b_tf32.size(); ++e) b_tf32[e] = round_tf32(b.f[e]);
        ap = a_tf32.data();
        bp = b_tf32.data();
      }
      std::vector<double> row(static_cast<size_t>(N));
      for (int64_t p = 0; p < batch; ++p)
        for (int64_t i = 0; i < M; ++i) {
          const double* arow = ap + (p * M + i) * K;
          const double* crow = c.f.data() + (p * M + i) * N;
          for (int64_t j = 0; j < N; ++j) row[size_t(j)] = crow[j];
          for (int64_t kk = 0; kk < K; ++kk) {
            double aik = arow[kk];
            const double* brow = bp + (p * K + kk) * N;
            for (int64_t j = 0; j < N; ++j) row[size_t(j)] += aik * brow[j];
          }
          double* rrow = r.f.data() + (p * M + i) * N;
          for (int64_t j = 0; j < N; ++j) rrow[j] = round_float<D>(row[size_t(j)]);
        }
    } else {
      std::vector<int64_t> row(static_cast<size_t>(N));
      for (int64_t p = 0; p < batch; ++p)
        for (int64_t i = 0; i < M; ++i) {
          const int64_t* arow = a.i.data() + (p * M + i) * K;
          const int64_t* crow = c.i.data() + (p * M + i) * N;
          for (int64_t j = 0; j < N; ++j) row[size_t(j)] = crow[j];
          for (int64_t kk = 0; kk < K; ++kk) {
            int64_t aik = arow[kk];
            const int64_t* brow = b.i.data() + (p * K + kk) * N;
            for (int64_t j = 0; j < N; ++j) row[size_t(j)] += aik * brow[j];
          }
          int64_t* rrow = r.i.data() + (p * M + i) * N;
          for (int64_t j = 0; j < N; ++j) rrow[j] = wrap_int<D>(uint64_t(row[size_t(j)]));
        }
    }
  });
}

}  // namespace tl::interp
