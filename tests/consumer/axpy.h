// The kernel of the consumer programs: y = a*x + y over a ragged size.
#pragma once

#include <tiledsl/tiledsl.h>

constexpr int BLOCK = 128;

inline void axpy(tl::ptr<float> y, tl::ptr<float> x, tl::scalar<float> a, tl::scalar<int32_t> n) {
  auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);  // [BLOCK] i32
  auto m = offs < n;
  tl::store(y + offs, a * tl::load(x + offs, m, 0.0f) + tl::load(y + offs, m, 0.0f), m);
}
