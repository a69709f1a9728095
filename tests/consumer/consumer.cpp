// A kernel written from the README alone, in a project of its own: y = a*x + y
// over a ragged size, on the interpreter, checked against the host. Then the
// same kernel as an application that owns its memory and streams would run
// it (docs/embedding.md): on host memory it wraps, on a stream of its own,
// ordered by an event.
#include <tiledsl/tiledsl.h>

#include <cmath>
#include <cstdio>
#include <vector>

#include "axpy.h"

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

  // The application's memory, wrapped (never freed by tiledsl), and a stream
  // of its own: y2 = 2*x + y2, then y2 = 2*x + y2 again once an event says
  // the first launch is done.
  std::vector<float> y2(hy);
  tl::Buffer wx = tl::Buffer::wrap<float>(dev, hx.data(), n);
  tl::Buffer wy = tl::Buffer::wrap<float>(dev, y2.data(), n);
  tl::Stream s1 = dev.create_stream(), s2 = dev.create_stream();
  tl::Event first = dev.create_event();
  s1(k, tl::Grid{uint32_t((n + BLOCK - 1) / BLOCK)}, wy, wx, 2.0f, n);
  first.record(s1);
  s2.wait(first);
  s2(k, tl::Grid{uint32_t((n + BLOCK - 1) / BLOCK)}, wy, wx, 2.0f, n);
  s2.synchronize();
  for (int i = 0; i < n; ++i)
    if (y2[size_t(i)] != 4.0f * hx[size_t(i)] + hy[size_t(i)]) {
      std::printf("wrapped element %d: %g, expected %g\nFAIL\n", i, y2[size_t(i)],
                  4.0f * hx[size_t(i)] + hy[size_t(i)]);
      return 1;
    }
  std::printf("axpy over %d elements on the interpreter, and twice on wrapped memory on two streams\nPASS\n", n);
  return 0;
}
