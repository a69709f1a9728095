// Constants and shape manipulation: constant, arange, splat, broadcast,
// expand_dims, reshape, trans, join, split. These move elements without
// looking at them, so they work on either storage the same way.
#include "interp/program.h"

namespace tl::interp {

namespace {

// Calls f(src_storage, dst_storage) on the int or float vectors.
template <class F>
void with_storage(const Slot& src, Slot& dst, F&& f) {
  if (src.is_float) f(src.f, dst.f);
  else f(src.i, dst.i);
}

std::vector<int64_t> strides_of(const std::vector<int64_t>& shape) {
  std::vector<int64_t> st(shape.size(), 1);
  for (int d = int(shape.size()) - 2; d >= 0; --d) st[size_t(d)] = st[size_t(d) + 1] * shape[size_t(d) + 1];
  return st;
}

// dst[idx] = src[sum(idx[d] * src_stride[d])] over the destination shape:
// the one gather that broadcast and trans both are.
template <class V>
void gather(const V& src, V& dst, const std::vector<int64_t>& dst_shape, const std::vector<int64_t>& src_stride) {
  int rank = int(dst_shape.size());
  int64_t n = int64_t(dst.size());
  std::vector<int64_t> idx(size_t(rank), 0);
  int64_t off = 0;
  for (int64_t k = 0; k < n; ++k) {
    dst[size_t(k)] = src[size_t(off)];
    for (int d = rank - 1; d >= 0; --d) {  // odometer increment
      off += src_stride[size_t(d)];
      if (++idx[size_t(d)] < dst_shape[size_t(d)]) break;
      off -= src_stride[size_t(d)] * idx[size_t(d)];
      idx[size_t(d)] = 0;
    }
  }
}

}  // namespace

void exec_shape(Exec& ex, const Instr& in) {
  using K = ir::OpKind;
  Slot& r = ex.slots[size_t(in.out[0])];
  const ir::Type& rt = ex.type_of(in.out[0]);
  int64_t n = rt.numel();
  switch (in.kind) {
    case K::Constant:
      r.resize(n);
      if (r.is_float) std::fill(r.f.begin(), r.f.end(), in.float_attr);
      else std::fill(r.i.begin(), r.i.end(), in.int_attr);
      return;
    case K::Arange:
      r.resize(n);
      for (int64_t k = 0; k < n; ++k) r.i[size_t(k)] = int64_t(int32_t(uint32_t(in.int_attr + k)));
      return;
    case K::Splat: {
      const Slot& a = ex.slots[size_t(in.in[0])];
      r.resize(n);
      with_storage(a, r, [&](const auto& s, auto& d) { std::fill(d.begin(), d.begin() + n, s[0]); });
      return;
    }
    case K::ExpandDims: case K::Reshape:
      r.copy_from(ex.slots[size_t(in.in[0])]);
      return;
    case K::Broadcast: {
      const Slot& a = ex.slots[size_t(in.in[0])];
      const auto& src_shape = ex.type_of(in.in[0]).shape;
      auto st = strides_of(src_shape);
      for (size_t d = 0; d < st.size(); ++d)
        if (src_shape[d] == 1) st[d] = 0;  // expanded dims repeat the one element
      r.resize(n);
      with_storage(a, r, [&](const auto& s, auto& d) { gather(s, d, rt.shape, st); });
      return;
    }
    case K::Trans: {
      const Slot& a = ex.slots[size_t(in.in[0])];
      auto src_st = strides_of(ex.type_of(in.in[0]).shape);
      std::vector<int64_t> st(in.ints.size());
      for (size_t d = 0; d < st.size(); ++d) st[d] = src_st[size_t(in.ints[d])];
      r.resize(n);
      with_storage(a, r, [&](const auto& s, auto& d) { gather(s, d, rt.shape, st); });
      return;
    }
    case K::Join: {
      const Slot& a = ex.slots[size_t(in.in[0])];
      const Slot& b = ex.slots[size_t(in.in[1])];
      r.resize(n);
      with_storage(a, r, [&](const auto& s, auto& d) {
        for (int64_t k = 0; k < n / 2; ++k) d[size_t(2 * k)] = s[size_t(k)];
      });
      with_storage(b, r, [&](const auto& s, auto& d) {
        for (int64_t k = 0; k < n / 2; ++k) d[size_t(2 * k + 1)] = s[size_t(k)];
      });
      return;
    }
    case K::Split: {
      const Slot& a = ex.slots[size_t(in.in[0])];
      Slot& r1 = ex.slots[size_t(in.out[1])];
      r.resize(n);
      r1.resize(n);
      with_storage(a, r, [&](const auto& s, auto& d) {
        for (int64_t k = 0; k < n; ++k) d[size_t(k)] = s[size_t(2 * k)];
      });
      with_storage(a, r1, [&](const auto& s, auto& d) {
        for (int64_t k = 0; k < n; ++k) d[size_t(k)] = s[size_t(2 * k + 1)];
      });
      return;
    }
    default: ex.fail(in, "interp: not a shape op");
  }
}

}  // namespace tl::interp
