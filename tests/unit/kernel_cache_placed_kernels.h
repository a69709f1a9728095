// Kernels placed in other source files by #line, for the cache key test
// (test_kernel_cache.cpp): the same body in two files, and a device_assert
// at two lines. A #line in a header ends with the header.
#pragma once

#include "tiledsl/tiledsl.h"

namespace kernel_cache_test {

template <int FILE>
void placed_kernel(tl::ptr<float> x);

template <int LINE>
void asserting_kernel(tl::ptr<float> x) {
  auto v = tl::load(x + tl::arange(0, 16));  // [16] f32
  if constexpr (LINE == 0) {
#line 20 "/one/checkout/asserts.h"
    tl::device_assert(v >= 0.0f, "negative");
  } else {
#line 21 "/one/checkout/asserts.h"
    tl::device_assert(v >= 0.0f, "negative");
  }
  tl::store(x + tl::arange(0, 16), v);
}

template <>
inline void placed_kernel<0>(tl::ptr<float> x) {
#line 10 "/one/checkout/kernels.h"
  tl::store(x + tl::arange(0, 16), tl::load(x + tl::arange(0, 16)) + 1.0f);
}

template <>
inline void placed_kernel<1>(tl::ptr<float> x) {
#line 10 "/another/checkout/kernels.h"
  tl::store(x + tl::arange(0, 16), tl::load(x + tl::arange(0, 16)) + 1.0f);
}

}  // namespace kernel_cache_test
