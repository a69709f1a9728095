// A kernel written from the README alone, in a project of its own: y = a*x + y
// over a ragged size, on the interpreter, checked against the host.
#include <tiledsl/tiledsl.h>

#include <cmath>
#include <cstdio>
#include <vector>

constexpr int BLOCK = 128;

void axpy(tl::ptr<float> y, tl::ptr<float> x, tl::scalar<float> a, tl::scalar<int32_t> n) {
  auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);  // [BLOCK] i32
  auto m = offs < n;
  tl::store(y + offs, a * tl::load(x + offs, m, 0.0f) + tl::load(y + offs, m, 0.0f), m);
}

int main() {
  tl::Device dev = tl::Device::get("interp");
  const int n = 1000;
  std::vector<float> hx(n), hy(n);
  for (int i = 0; i < n; ++i) hx[size_t(i)] = float(i) * 0.5f, hy[size_t(i)] = float(n - i);
  auto x = dev.upload(hx), y = dev.upload(hy);
  auto k = tl::compile(axpy, {.name = "axpy"});
  dev(k, tl::Grid{uint32_t((n + BLOCK - 1) / BLOCK)}, y, x, 3.0f, n);
  dev.synchronize();
  auto got = y.download<float>();
  for (int i = 0; i < n; ++i)
    if (got[size_t(i)] != 3.0f * hx[size_t(i)] + hy[size_t(i)]) {
      std::printf("element %d: %g, expected %g\nFAIL\n", i, got[size_t(i)], 3.0f * hx[size_t(i)] + hy[size_t(i)]);
      return 1;
    }
  std::printf("axpy over %d elements on the interpreter\nPASS\n", n);
  return 0;
}
