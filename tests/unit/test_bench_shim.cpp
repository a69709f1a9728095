// bench/shim/attention.cpp's C function (what compare_attention.py calls
// through ctypes on torch's tensors), on the interpreter with host memory:
// the result against attention computed here in double, and its errors
// returned, not thrown.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "../../bench/shim/attention.cpp"

TEST_CASE("bench shim: tl_attention on wrapped memory matches attention in double, and reports bad shapes",
          "[bench-shim]") {
  const int B = 1, H = 2, N = 70, D = 64, group = 2;  // grouped: 2 query heads on 1 key/value head
  const size_t n = size_t(B) * H * N * D, n_kv = n / group;
  std::vector<tl::bf16> q(n), k(n_kv), v(n_kv), o(n);
  for (size_t i = 0; i < n; ++i) q[i] = tl::bf16(float((i * 37) % 17) / 8.0f - 1.0f);
  for (size_t i = 0; i < n_kv; ++i) {
    k[i] = tl::bf16(float((i * 53) % 19) / 9.0f - 1.0f);
    v[i] = tl::bf16(float((i * 29) % 13) / 6.0f - 1.0f);
  }
  char error[256] = "";
  for (int causal : {0, 1}) {
    INFO((causal ? "causal" : "non-causal"));
    REQUIRE(tl_attention("interp", q.data(), k.data(), v.data(), o.data(), B, H, N, D, causal, group, nullptr, error,
                         sizeof error) == 0);
    for (int h = 0; h < H; ++h)
      for (int i = 0; i < N; ++i) {
        const size_t qi = (size_t(h) * N + i) * D;
        const size_t kv = size_t(h / group) * N * D;
        std::vector<double> p(N, 0.0);
        double most = -INFINITY, sum = 0;
        for (int j = 0; j <= (causal ? i : N - 1); ++j) {
          double s = 0;
          for (int d = 0; d < D; ++d) s += double(float(q[qi + d])) * double(float(k[kv + size_t(j) * D + d]));
          p[size_t(j)] = s / std::sqrt(double(D));
          most = std::max(most, p[size_t(j)]);
        }
        for (int j = 0; j <= (causal ? i : N - 1); ++j) sum += p[size_t(j)] = std::exp(p[size_t(j)] - most);
        for (int d = 0; d < D; d += 7) {
          double want = 0;
          for (int j = 0; j <= (causal ? i : N - 1); ++j) want += p[size_t(j)] * double(float(v[kv + size_t(j) * D + d]));
          want /= sum;
          INFO("head " << h << " row " << i << " col " << d);
          REQUIRE(std::abs(double(float(o[qi + d])) - want) <= 2e-2 * std::abs(want) + 2e-2);
        }
      }
  }
  CHECK(tl_attention("interp", q.data(), k.data(), v.data(), o.data(), B, H, N, 96, 0, group, nullptr, error,
                     sizeof error) == -1);
  CHECK(std::string(error) == "tl_attention: expected head dim 64 or 128, found 96");
  CHECK(tl_attention("interp", q.data(), k.data(), v.data(), o.data(), B, 3, N, D, 0, group, nullptr, error,
                     sizeof error) == -1);
  CHECK(std::string(error).find("H a multiple of group") != std::string::npos);
}
