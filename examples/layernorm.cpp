// layernorm: forward layer normalization of each row of a bf16 matrix
// X [M, N] with an f32 weight and bias [N]:
//   y = (x - mean) / sqrt(var + eps) * w + b,
// also writing each row's mean and rstd = 1 / sqrt(var + eps) (what a
// backward pass needs). Two forms:
//  - layernorm_rows: the whole row is one tile (N <= BLOCK), x is read
//    once. Persistent: two programs per multiprocessor walk the rows, each
//    loading the next two rows while it works on this one (tl::range with
//    num_stages = 3; w and b, the same for every row, are copied once into
//    shared memory), so it runs near the copy bandwidth;
//  - layernorm_blocks: one program per row; a row longer than the largest
//    tile is walked in BLOCK-column steps with tl::range (loop-carried
//    partial sums), so it serves any N, reading x three times (the second
//    and third from cache).
// Statistics are computed in f32 whatever the input type. --small runs and
// checks both forms.
#include "common.h"

template <int BLOCK>
void layernorm_rows(tl::ptr<tl::bf16> X, tl::ptr<tl::bf16> Y, tl::ptr<float> W, tl::ptr<float> B,
                    tl::ptr<float> Mean, tl::ptr<float> Rstd, tl::scalar<int32_t> row_stride,
                    tl::scalar<int32_t> M, tl::scalar<int32_t> N, tl::scalar<float> eps) {
  auto cols = tl::arange(0, BLOCK);                          // [BLOCK] i32
  auto mask = cols < N;                                      // [BLOCK] i1
  auto n = tl::cast<float>(N);                               // scalar f32
  // The loop stores, so the depth is asked for: no row is written before
  // another reads it.
  for (auto row : tl::range(tl::program_id(0), M, tl::num_programs(0), {.num_stages = 3})) {
    auto x = tl::cast<float>(tl::load(X + row * row_stride + cols, mask, 0.0f, {.cache = ".cg"}));  // [BLOCK] f32
    auto mean = tl::sum(x, 0) / n;                           // scalar f32
    auto centered = tl::where(mask, x - mean, 0.0f);         // [BLOCK] f32
    auto rstd = tl::rsqrt(tl::sum(centered * centered, 0) / n + eps);  // scalar f32
    tl::store(Mean + row, mean);
    tl::store(Rstd + row, rstd);
    auto w = tl::load(W + cols, mask);                       // [BLOCK] f32
    auto b = tl::load(B + cols, mask);                       // [BLOCK] f32
    tl::store(Y + row * row_stride + cols, tl::cast<tl::bf16>(centered * rstd * w + b), mask);
  }
}

template <int BLOCK>
void layernorm_blocks(tl::ptr<tl::bf16> X, tl::ptr<tl::bf16> Y, tl::ptr<float> W, tl::ptr<float> B,
               tl::ptr<float> Mean, tl::ptr<float> Rstd, tl::scalar<int32_t> row_stride,
               tl::scalar<int32_t> N, tl::scalar<float> eps) {
  auto row = tl::program_id(0);                              // scalar i32
  auto x_row = X + row * row_stride;                         // scalar ptr<bf16>
  auto y_row = Y + row * row_stride;
  auto block_cols = tl::arange(0, BLOCK);                    // [BLOCK] i32
  auto n = tl::cast<float>(N);                               // scalar f32

  // Mean: per-lane partial sums across the blocks, then one reduction.
  // `partial_sum` is assigned in the loop, so it becomes loop-carried.
  auto partial_sum = tl::zeros<float>({BLOCK});              // [BLOCK] f32
  for (auto off : tl::range(0, N, BLOCK)) {
    auto cols = off + block_cols;                            // [BLOCK] i32
    auto x = tl::cast<float>(tl::load(x_row + cols, cols < N));  // [BLOCK] f32, 0 past N
    partial_sum = partial_sum + x;
  }
  auto mean = tl::sum(partial_sum, 0) / n;                   // scalar f32

  // Variance from centered values (more accurate than E[x^2] - mean^2);
  // lanes past N must contribute 0, not (0 - mean)^2.
  auto partial_sq = tl::zeros<float>({BLOCK});               // [BLOCK] f32
  for (auto off : tl::range(0, N, BLOCK)) {
    auto cols = off + block_cols;                            // [BLOCK] i32
    auto mask = cols < N;                                    // [BLOCK] i1
    auto x = tl::cast<float>(tl::load(x_row + cols, mask));  // [BLOCK] f32
    auto centered = tl::where(mask, x - mean, 0.0f);         // [BLOCK] f32
    partial_sq = partial_sq + centered * centered;
  }
  auto rstd = tl::rsqrt(tl::sum(partial_sq, 0) / n + eps);   // scalar f32
  tl::store(Mean + row, mean);
  tl::store(Rstd + row, rstd);

  // Normalize, scale and shift; the row is read a third time (from cache on
  // a GPU when it fits).
  for (auto off : tl::range(0, N, BLOCK)) {
    auto cols = off + block_cols;                            // [BLOCK] i32
    auto mask = cols < N;                                    // [BLOCK] i1
    auto w = tl::load(W + cols, mask);                       // [BLOCK] f32
    auto b = tl::load(B + cols, mask);                       // [BLOCK] f32
    auto x = tl::cast<float>(tl::load(x_row + cols, mask));  // [BLOCK] f32
    auto y = (x - mean) * rstd * w + b;                      // [BLOCK] f32
    tl::store(y_row + cols, tl::cast<tl::bf16>(y), mask);
  }
}

int main(int argc, char** argv) {
  return examples::run_main([&] {
    auto s = examples::parse_args(argc, argv, "layer normalization (forward)");
    const int M = s.small ? 48 : s.on_interp ? 1024 : 4096;
    const int N = s.small ? 2500 : s.on_interp ? 5000 : 8192;
    const float eps = 1e-5f;
    // Rows up to MAX_ROW elements are one tile; longer rows walk column
    // blocks of MAX_BLOCK. --small has N > MAX_BLOCK, so the column loop
    // runs several times with a ragged last block.
    constexpr int MAX_ROW = 16384, MAX_BLOCK = 1024;
    const bool fits = N <= MAX_ROW;
    std::vector<bool> forms;  // true: one tile a row
    if (fits) forms.push_back(true);
    if (!fits || s.small) forms.push_back(false);

    // An offset and a spread so that mean and variance are not trivial.
    auto hx = examples::random_vector<tl::bf16>(size_t(M) * N, 4, -2.0f, 3.0f);
    auto hw = examples::random_vector<float>(N, 5, 0.5f, 1.5f);
    auto hb = examples::random_vector<float>(N, 6, -0.5f, 0.5f);
    tl::Buffer x = s.dev.upload(hx), w = s.dev.upload(hw), b = s.dev.upload(hb);

    std::vector<double> ref_y(size_t(M) * N), ref_mean(M), ref_rstd(M);
    auto dx = examples::to_double(hx);
    for (int r = 0; r < M; ++r) {
      const double* xr = &dx[size_t(r) * N];
      double mu = 0, var = 0;
      for (int c = 0; c < N; ++c) mu += xr[c];
      mu /= N;
      for (int c = 0; c < N; ++c) var += (xr[c] - mu) * (xr[c] - mu);
      double rs = 1.0 / std::sqrt(var / N + double(eps));
      ref_mean[r] = mu;
      ref_rstd[r] = rs;
      for (int c = 0; c < N; ++c) ref_y[size_t(r) * N + c] = (xr[c] - mu) * rs * hw[c] + hb[c];
    }

    int rc = 0;
    for (bool row_form : forms) {
      const int BLOCK = row_form ? examples::next_pow2(N) : std::min(examples::next_pow2(N), MAX_BLOCK);
      // A whole row: 64 elements a thread up to 16 warps (on the H200, 4
      // warps at N = 8192 beat 8 by 3%: docs/perf.md run 35).
      const int warps = row_form ? std::clamp(BLOCK / 2048, 4, 16) : 4;
      const uint32_t programs = row_form ? uint32_t(std::min(M, 2 * s.dev.processor_count())) : uint32_t(M);
      tl::Kernel k;
      double compile_ms = examples::wall_ms([&] {
        k = examples::with_pow2<16, MAX_ROW>(BLOCK, [&]<int BL>() {
          return row_form ? tl::compile(layernorm_rows<BL>, {.name = "layernorm_rows", .num_warps = warps})
                          : tl::compile(layernorm_blocks<BL>, {.name = "layernorm_blocks", .num_warps = warps});
        });
      });
      std::printf("layernorm (%s): M=%d N=%d BLOCK=%d, %u programs on %s (tl::compile %.1f ms)\n",
                  row_form ? "one tile a row, persistent" : "column blocks", M, N, BLOCK, programs,
                  s.dev.name().c_str(), compile_ms);
      tl::Buffer y = s.dev.alloc<tl::bf16>(size_t(M) * N);
      tl::Buffer mean = s.dev.alloc<float>(M), rstd = s.dev.alloc<float>(M);
      double ms = examples::time_ms(s, [&] {
        if (row_form) s.dev(k, tl::Grid{programs}, x, y, w, b, mean, rstd, N, M, N, eps);
        else s.dev(k, tl::Grid{programs}, x, y, w, b, mean, rstd, N, N, eps);
      });
      // y is rounded to bf16 (8 significant bits: relative error <= 2^-9);
      // mean and rstd are f32 results of f32 sums over N terms.
      auto check = examples::compare(y.download<tl::bf16>(), ref_y, 1e-2, 8e-3);
      check = examples::merge(check, examples::compare(mean.download<float>(), ref_mean, 1e-5, 1e-4));
      check = examples::merge(check, examples::compare(rstd.download<float>(), ref_rstd, 1e-5, 1e-4));
      // Traffic: x read once from memory (the column form's later reads hit
      // the cache), y written once; w and b are shared by every row.
      double bytes = 2.0 * M * N * sizeof(tl::bf16) + 2.0 * N * sizeof(float) + 2.0 * M * sizeof(float);
      rc |= examples::report(check, {.ms = ms, .bytes = bytes});
    }
    return rc;
  });
}
