// Helpers of the interpreter tests (test_interp*.cpp): hand-built kernels
// (kernel_builder.h) of one elementwise op run on the interpreter, host
// vectors to and from buffers, and bit-exact comparison.
#pragma once

#include <bit>
#include <catch2/catch.hpp>
#include <cmath>
#include <type_traits>
#include <vector>

#include "kernel_builder.h"
#include "tiledsl/runtime.h"

namespace interp_test {

using namespace kb;
using tl::dtype_v;

inline tl::Device interp() { return tl::Device::get("interp"); }

inline int64_t pow2_at_least(size_t n) {
  int64_t p = 1;
  while (p < int64_t(n)) p *= 2;
  return p;
}

template <class T>
std::vector<T> padded(std::vector<T> v, int64_t n) {
  v.resize(size_t(n), T(1));
  return v;
}

// Host vectors to and from device buffers; std::vector<bool> has no data(),
// so i1 buffers go through bytes.
template <class T>
tl::Buffer to_device(tl::Device& dev, const std::vector<T>& v) {
  if constexpr (std::is_same_v<T, bool>) {
    auto b = dev.alloc(DType::i1, v.size());
    std::vector<uint8_t> bytes(v.begin(), v.end());
    b.copy_from_host(bytes.data(), bytes.size());
    return b;
  } else {
    return dev.upload(v);
  }
}
template <class T>
std::vector<T> from_device(const tl::Buffer& b) {
  if constexpr (std::is_same_v<T, bool>) {
    std::vector<uint8_t> bytes(b.size());
    b.copy_to_host(bytes.data(), bytes.size());
    return std::vector<bool>(bytes.begin(), bytes.end());
  } else {
    return b.download<T>();
  }
}

// out[i] = k(a[i], b[i]) for a binary elementwise op (or cmp with `attrs`).
template <class TR, class TA>
std::vector<TR> binary(OpKind k, const std::vector<TA>& a, const std::vector<TA>& b, tl::ir::Attrs attrs = {}) {
  constexpr DType da = dtype_v<TA>, dr = dtype_v<TR>;
  int64_t n = pow2_at_least(a.size());
  KernelBuilder kb("binary", {P(da), P(da), P(dr)});
  Value* offs = kb.arange(n);
  Value* x = kb.load(kb.ptrs(kb.arg(0), offs));
  Value* y = kb.load(kb.ptrs(kb.arg(1), offs));
  kb.store(kb.ptrs(kb.arg(2), offs), kb.op(k, {x, y}, T(dr, {n}), attrs));
  auto dev = interp();
  auto ba = to_device(dev, padded(a, n)), bb = to_device(dev, padded(b, n));
  auto bo = dev.alloc<TR>(size_t(n));
  dev(kb.kernel(), {1}, ba, bb, bo);
  auto out = from_device<TR>(bo);
  out.resize(a.size());
  return out;
}

// out[i] = k(a[i]) for a unary elementwise op producing TR.
template <class TR, class TA>
std::vector<TR> unary(OpKind k, const std::vector<TA>& a) {
  constexpr DType da = dtype_v<TA>, dr = dtype_v<TR>;
  int64_t n = pow2_at_least(a.size());
  KernelBuilder kb("unary", {P(da), P(dr)});
  Value* offs = kb.arange(n);
  Value* x = kb.load(kb.ptrs(kb.arg(0), offs));
  kb.store(kb.ptrs(kb.arg(1), offs), kb.op(k, {x}, T(dr, {n})));
  auto dev = interp();
  auto ba = to_device(dev, padded(a, n));
  auto bo = dev.alloc<TR>(size_t(n));
  dev(kb.kernel(), {1}, ba, bo);
  auto out = from_device<TR>(bo);
  out.resize(a.size());
  return out;
}

template <class T>
bool same_bits(T x, T y) {
  if constexpr (std::is_floating_point_v<T>) return std::isnan(x) ? std::isnan(y) : std::bit_cast<std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>(x) == std::bit_cast<std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>(y);
  else return x == y;
}

template <class T>
void check_bits(const std::vector<T>& got, const std::vector<T>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i << ": got " << +got[i] << ", want " << +want[i]);
    CHECK(same_bits(got[i], want[i]));
  }
}

inline float bf(float x) { return float(tl::bf16(x)); }

}  // namespace interp_test
