// softmax: row-wise softmax of a float matrix [M, N], one program per row.
// The whole row is one tile: BLOCK is the next power of two >= N (tile
// sizes are powers of two), and the lanes past N are masked. The block size
// is a template parameter, so a run-time N picks an instantiation
// (examples::with_pow2). A bandwidth kernel: one read and one write.
#include "common.h"

template <int BLOCK>
void softmax(tl::ptr<float> out, tl::ptr<float> in, tl::scalar<int32_t> in_row_stride,
             tl::scalar<int32_t> out_row_stride, tl::scalar<int32_t> n_cols) {
  auto row = tl::program_id(0);                              // scalar i32
  auto cols = tl::arange(0, BLOCK);                          // [BLOCK] i32
  auto mask = cols < n_cols;                                 // [BLOCK] i1
  // Masked lanes read -inf: they do not change the max, and exp(-inf) = 0
  // keeps them out of the sum.
  auto x = tl::load(in + row * in_row_stride + cols, mask, -INFINITY);  // [BLOCK] f32
  auto mx = tl::max(x, 0);                                   // scalar f32
  // A row that is all -inf has max -inf, and x - max would be NaN
  // (-inf - -inf): shift it by 0 and divide by 1 instead, so it gives 0s.
  auto empty = mx == -INFINITY;                              // scalar i1
  auto numerator = tl::exp(x - tl::where(empty, 0.0f, mx));  // [BLOCK] f32
  auto denominator = tl::sum(numerator, 0);                  // scalar f32
  tl::store(out + row * out_row_stride + cols, numerator / tl::where(empty, 1.0f, denominator), mask);
}

int main(int argc, char** argv) {
  return examples::run_main([&] {
    auto s = examples::parse_args(argc, argv, "row-wise softmax");
    // N is deliberately not a power of two.
    const int M = s.small ? 64 : s.on_interp ? 2048 : 8192;
    const int N = s.small ? 781 : s.on_interp ? 3000 : 4000;
    const int BLOCK = examples::next_pow2(N);

    tl::Kernel k;
    double compile_ms = examples::wall_ms([&] {
      k = examples::with_pow2<16, 16384>(BLOCK, [&]<int B>() {
        return tl::compile(softmax<B>, {.name = "softmax"});
      });
    });
    std::printf("softmax: M=%d N=%d BLOCK=%d on %s (tl::compile %.1f ms)\n", M, N, BLOCK,
                s.dev.name().c_str(), compile_ms);

    // A wide range makes the max subtraction matter; row 1 is all -inf
    // (like a fully masked attention row): its softmax is all 0s.
    auto hx = examples::random_vector<float>(size_t(M) * N, 3, -20.0f, 20.0f);
    std::fill_n(hx.begin() + N, N, -INFINITY);
    tl::Buffer x = s.dev.upload(hx);
    tl::Buffer y = s.dev.alloc<float>(size_t(M) * N);

    double ms = examples::time_ms(s, [&] { s.dev(k, tl::Grid{uint32_t(M)}, y, x, N, N, N); });

    std::vector<double> ref(size_t(M) * N);
    for (int r = 0; r < M; ++r) {
      const float* xr = &hx[size_t(r) * N];
      double mx = *std::max_element(xr, xr + N), total = 0;
      if (mx == -INFINITY) continue;  // an all -inf row: 0s (ref starts at 0)
      for (int c = 0; c < N; ++c) total += std::exp(double(xr[c]) - mx);
      for (int c = 0; c < N; ++c) ref[size_t(r) * N + c] = std::exp(double(xr[c]) - mx) / total;
    }
    // f32 exp and sum over ~1e3 terms: a few ulps of f32 relative error.
    auto check = examples::compare(y.download<float>(), ref, 1e-7, 1e-5);
    return examples::report(check, {.ms = ms, .bytes = 2.0 * M * N * sizeof(float)});
  });
}
