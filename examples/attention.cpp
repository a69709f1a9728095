// attention: flash-attention forward, O = softmax(Q K^T * sm_scale) V, with
// Q, K, V, O of shape [B, H, N, D] in bf16 (contiguous). Each program owns BM
// query rows of one (batch, head) and streams the keys and values in BN-row
// blocks, never materializing the N x N score matrix: an online softmax keeps
// each row's running max m_i and running sum l_i in f32 and rescales the
// partial output whenever the max grows. Scores are scaled by
// sm_scale * log2(e) so exp2 can stand in for exp. CAUSAL (query i sees keys
// j <= i) is a template parameter: the causal loop also stops at the
// diagonal, halving the work.
#include "common.h"

template <int BM, int BN, int HEAD_DIM, bool CAUSAL>
void attention(tl::ptr<tl::bf16> Q, tl::ptr<tl::bf16> K, tl::ptr<tl::bf16> V, tl::ptr<tl::bf16> O,
               tl::scalar<int32_t> seq_len, tl::scalar<float> sm_scale) {
  auto start_m = tl::program_id(0);                             // block of query rows
  auto head = tl::program_id(1);                                // batch * H + head
  auto base = head * seq_len * HEAD_DIM;                        // scalar i32: this head's [N, D]

  auto offs_m = start_m * BM + tl::arange(0, BM);               // [BM] i32
  auto offs_n = tl::arange(0, BN);                              // [BN] i32
  auto offs_d = tl::arange(0, HEAD_DIM);                        // [D] i32
  auto row_ok = tl::col(offs_m < seq_len);                      // [BM, 1] i1
  auto q = tl::load(Q + base + tl::col(offs_m) * HEAD_DIM + tl::row(offs_d), row_ok);  // [BM, D] bf16
  auto qk_scale = sm_scale * 1.44269504f;                       // scalar f32: log2(e) folded in

  auto m_i = tl::full<float>({BM}, -INFINITY);                  // [BM] f32 running max (log2 units)
  auto l_i = tl::zeros<float>({BM});                            // [BM] f32 running sum of p
  auto acc = tl::zeros<float>({BM, HEAD_DIM});                  // [BM, D] f32 unnormalized output

  // Keys past the last query row of this block are all masked when causal.
  auto hi = seq_len;                                            // scalar i32
  if constexpr (CAUSAL) hi = tl::minimum((start_m + 1) * BM, seq_len);

  for (auto start_n : tl::range(0, hi, BN)) {
    auto cols = start_n + offs_n;                               // [BN] i32: key indices
    auto col_ok = tl::col(cols < seq_len);                      // [BN, 1] i1
    auto kv_offs = base + tl::col(cols) * HEAD_DIM + tl::row(offs_d);  // [BN, D] i32
    auto k = tl::load(K + kv_offs, col_ok);                     // [BN, D] bf16
    auto v = tl::load(V + kv_offs, col_ok);                     // [BN, D] bf16

    auto qk = tl::dot(q, tl::trans(k)) * qk_scale;              // [BM, BN] f32
    auto key_ok = tl::row(cols < seq_len);                      // [1, BN] i1
    if constexpr (CAUSAL)
      qk = tl::where(key_ok & (tl::col(offs_m) >= tl::row(cols)), qk, -INFINITY);  // [BM, BN] f32
    else
      qk = tl::where(key_ok, qk, -INFINITY);

    // Key 0 is valid for every row, and the first block contains it, so
    // m_new is finite from the first iteration on: no inf - inf below.
    auto m_new = tl::maximum(m_i, tl::max(qk, 1));              // [BM] f32
    auto p = tl::exp2(qk - tl::col(m_new));                     // [BM, BN] f32
    auto alpha = tl::exp2(m_i - m_new);                         // [BM] f32: rescales the old state
    l_i = l_i * alpha + tl::sum(p, 1);
    // P is rounded to bf16 for the tensor-core product, as in Triton.
    acc = tl::dot(tl::cast<tl::bf16>(p), v, acc * tl::col(alpha));  // [BM, D] f32
    m_i = m_new;
  }

  auto out = acc / tl::col(l_i);                                // [BM, D] f32
  tl::store(O + base + tl::col(offs_m) * HEAD_DIM + tl::row(offs_d), tl::cast<tl::bf16>(out), row_ok);
}

struct Shape {
  int B, H, N, D;
};

// softmax(Q K^T * scale) V in double for the given query rows (flattened
// over [B * H, N]): returns rows.size() x D values.
static std::vector<double> reference(const Shape& sh, bool causal, float sm_scale, const std::vector<int>& rows,
                                     const std::vector<double>& q, const std::vector<double>& k,
                                     const std::vector<double>& v) {
  const int N = sh.N, D = sh.D;
  std::vector<double> out(rows.size() * D), scores(N);
  for (size_t r = 0; r < rows.size(); ++r) {
    size_t base = size_t(rows[r] / N) * N * D;  // this head's [N, D]
    int i = rows[r] % N;
    int n_keys = causal ? i + 1 : N;
    double mx = -INFINITY, total = 0;
    for (int j = 0; j < n_keys; ++j) {
      double dotp = 0;
      for (int d = 0; d < D; ++d) dotp += q[base + size_t(i) * D + d] * k[base + size_t(j) * D + d];
      scores[j] = dotp * sm_scale;
      mx = std::max(mx, scores[j]);
    }
    for (int j = 0; j < n_keys; ++j) total += (scores[j] = std::exp(scores[j] - mx));
    for (int d = 0; d < D; ++d) {
      double o = 0;
      for (int j = 0; j < n_keys; ++j) o += scores[j] * v[base + size_t(j) * D + d];
      out[r * D + d] = o / total;
    }
  }
  return out;
}

// Compiles and checks one configuration; returns the exit code.
template <int BM, int BN, int D, bool CAUSAL>
int run(examples::Setup& s, const Shape& sh, int num_warps) {
  static_assert(D == 64 || D == 128, "instantiate the head sizes you use");
  tl::Kernel kernel;
  double compile_ms = examples::wall_ms([&] {
    kernel = tl::compile(attention<BM, BN, D, CAUSAL>,
                         {.name = CAUSAL ? "attention_causal" : "attention", .num_warps = num_warps, .num_stages = 3});
  });
  std::printf("attention: B=%d H=%d N=%d D=%d %s, tiles %dx%d, %d warps on %s (tl::compile %.1f ms)\n", sh.B, sh.H,
              sh.N, sh.D, CAUSAL ? "causal" : "non-causal", BM, BN, num_warps, s.dev.name().c_str(), compile_ms);

  size_t n = size_t(sh.B) * sh.H * sh.N * sh.D;
  auto hq = examples::random_vector<tl::bf16>(n, 9), hk = examples::random_vector<tl::bf16>(n, 10),
       hv = examples::random_vector<tl::bf16>(n, 11);
  tl::Buffer q = s.dev.upload(hq), k = s.dev.upload(hk), v = s.dev.upload(hv);
  tl::Buffer o = s.dev.alloc<tl::bf16>(n);
  const float sm_scale = 1.0f / std::sqrt(float(sh.D));

  tl::Grid grid{uint32_t(tl::cdiv(sh.N, BM)), uint32_t(sh.B * sh.H)};
  double ms = examples::time_ms(s, [&] { s.dev(kernel, grid, q, k, v, o, sh.N, sm_scale); });

  // Every query row when that is cheap, else 512 rows spread over all heads.
  int n_rows = sh.B * sh.H * sh.N;
  auto rows = examples::rows_to_check(n_rows, double(n_rows) * sh.N * sh.D <= 1 << 28 ? n_rows : 512);
  auto ref = reference(sh, CAUSAL, sm_scale, rows, examples::to_double(hq), examples::to_double(hk),
                       examples::to_double(hv));
  auto ho = o.download<tl::bf16>();
  std::vector<tl::bf16> got(rows.size() * sh.D);
  for (size_t r = 0; r < rows.size(); ++r) std::copy_n(&ho[size_t(rows[r]) * sh.D], sh.D, &got[r * sh.D]);
  // Outputs are weighted means of V in [-1, 1]: bf16 rounding of P and of
  // the output bound the error by a few 2^-9.
  auto check = examples::compare(got, ref, 4e-3, 1e-2);
  // Two matrix products of 2*N*N*D flops per head; causal does half.
  double flops = 4.0 * sh.B * sh.H * double(sh.N) * sh.N * sh.D * (CAUSAL ? 0.5 : 1.0);
  return examples::report(check, {.ms = ms, .flops = flops});
}

int main(int argc, char** argv) {
  return examples::run_main([&] {
    auto s = examples::parse_args(argc, argv, "flash-attention forward");
    int failures = 0;
    if (s.small || s.on_interp) {
      Shape sh = s.small ? Shape{1, 2, 128, 64} : Shape{2, 4, 512, 64};
      failures += run<64, 64, 64, false>(s, sh, 4);
      failures += run<64, 64, 64, true>(s, sh, 4);
    } else {
      Shape sh{4, 32, 4096, 64};
      failures += run<128, 64, 64, false>(s, sh, 8);
      failures += run<128, 64, 64, true>(s, sh, 8);
    }
    // Each run printed its own PASS/FAIL line; the exit code covers both.
    return failures ? 1 : 0;
  });
}
