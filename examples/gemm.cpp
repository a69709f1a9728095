// gemm: C = A @ B with A [M, K] and B [K, N] in bf16, f32 accumulation and
// a bf16 C [M, N]. Each program computes one BM x BN tile of C, walking K in
// BK steps with tl::range; masks cover the ragged edges of M, N and K, so no
// size has to be a multiple of a tile. Strides are kernel parameters (any
// row- or column-major layout works); tile sizes are template parameters.
//
// Program order is grouped (as in Triton's matmul tutorial): programs that
// run at the same time cover GROUP_M rows of tiles and share their columns of
// B, instead of sweeping a whole row of C and re-reading all of B, which
// improves L2 reuse on a GPU.
#include "common.h"

template <int BM, int BN, int BK, int GROUP_M>
void gemm(tl::ptr<tl::bf16> a, tl::ptr<tl::bf16> b, tl::ptr<tl::bf16> c,
          tl::scalar<int32_t> M, tl::scalar<int32_t> N, tl::scalar<int32_t> K,
          tl::scalar<int32_t> stride_am, tl::scalar<int32_t> stride_ak,
          tl::scalar<int32_t> stride_bk, tl::scalar<int32_t> stride_bn,
          tl::scalar<int32_t> stride_cm, tl::scalar<int32_t> stride_cn) {
  // Grouped order: pid -> (pid_m, pid_n). Groups of GROUP_M tile rows are
  // walked column by column; the last group may be shorter.
  auto pid = tl::program_id(0);                                 // scalar i32
  auto num_pid_m = tl::cdiv(M, BM);                             // scalar i32
  auto num_pid_n = tl::cdiv(N, BN);                             // scalar i32
  auto num_pid_in_group = GROUP_M * num_pid_n;                  // scalar i32
  auto group_id = pid / num_pid_in_group;
  auto first_pid_m = group_id * GROUP_M;
  auto group_size_m = tl::minimum(num_pid_m - first_pid_m, GROUP_M);
  auto pid_m = first_pid_m + (pid % num_pid_in_group) % group_size_m;
  auto pid_n = (pid % num_pid_in_group) / group_size_m;

  auto offs_m = pid_m * BM + tl::arange(0, BM);                 // [BM] i32
  auto offs_n = pid_n * BN + tl::arange(0, BN);                 // [BN] i32
  auto offs_k = tl::arange(0, BK);                              // [BK] i32
  auto a_ptrs = a + tl::col(offs_m) * stride_am + tl::row(offs_k) * stride_ak;  // [BM, BK] ptr<bf16>
  auto b_ptrs = b + tl::col(offs_k) * stride_bk + tl::row(offs_n) * stride_bn;  // [BK, BN] ptr<bf16>
  auto m_ok = tl::col(offs_m < M);                              // [BM, 1] i1
  auto n_ok = tl::row(offs_n < N);                              // [1, BN] i1

  // acc, a_ptrs and b_ptrs are assigned in the body: they become the loop's
  // carried values.
  auto acc = tl::zeros<float>({BM, BN});                        // [BM, BN] f32
  for (auto k : tl::range(0, K, BK)) {
    auto k_ok = k + offs_k < K;                                 // [BK] i1
    auto a_tile = tl::load(a_ptrs, m_ok & tl::row(k_ok), 0.0f);  // [BM, BK] bf16
    auto b_tile = tl::load(b_ptrs, tl::col(k_ok) & n_ok, 0.0f);  // [BK, BN] bf16
    acc = tl::dot(a_tile, b_tile, acc);                         // [BM, BN] f32
    a_ptrs += BK * stride_ak;
    b_ptrs += BK * stride_bk;
  }

  auto c_ptrs = c + tl::col(offs_m) * stride_cm + tl::row(offs_n) * stride_cn;  // [BM, BN] ptr<bf16>
  tl::store(c_ptrs, tl::cast<tl::bf16>(acc), m_ok & n_ok);
}

// Compiles gemm<...> for one tile configuration and runs it on s.dev.
template <int BM, int BN, int BK, int GROUP_M>
int run(examples::Setup& s, int M, int N, int K, int num_warps) {
  tl::Kernel k;
  double compile_ms = examples::wall_ms([&] {
    k = tl::compile(gemm<BM, BN, BK, GROUP_M>, {.name = "gemm", .num_warps = num_warps, .num_stages = 3});
  });
  std::printf("gemm: M=%d N=%d K=%d, tiles %dx%dx%d, GROUP_M=%d, %d warps on %s (tl::compile %.1f ms)\n", M, N, K, BM,
              BN, BK, GROUP_M, num_warps, s.dev.name().c_str(), compile_ms);

  auto ha = examples::random_vector<tl::bf16>(size_t(M) * K, 7);  // row-major [M, K]
  auto hb = examples::random_vector<tl::bf16>(size_t(K) * N, 8);  // row-major [K, N]
  tl::Buffer a = s.dev.upload(ha), b = s.dev.upload(hb);
  tl::Buffer c = s.dev.alloc<tl::bf16>(size_t(M) * N);

  tl::Grid grid{uint32_t(tl::cdiv(M, BM) * tl::cdiv(N, BN))};
  double ms = examples::time_ms(s, [&] { s.dev(k, grid, a, b, c, M, N, K, K, 1, N, 1, N, 1); });

  // Reference in double from the same bf16 inputs, on every row of C when
  // that is cheap, else on 256 rows spread over it.
  auto rows = examples::rows_to_check(M, double(M) * N * K <= 1 << 30 ? M : 256);
  auto da = examples::to_double(ha), db = examples::to_double(hb);
  auto hc = c.download<tl::bf16>();
  std::vector<double> ref(rows.size() * N, 0.0);
  std::vector<tl::bf16> got(rows.size() * N);
  for (size_t r = 0; r < rows.size(); ++r) {
    double* ref_row = &ref[r * N];
    for (int kk = 0; kk < K; ++kk) {
      double a_ik = da[size_t(rows[r]) * K + kk];
      const double* b_row = &db[size_t(kk) * N];
      for (int j = 0; j < N; ++j) ref_row[j] += a_ik * b_row[j];
    }
    std::copy_n(&hc[size_t(rows[r]) * N], N, &got[r * N]);
  }
  // C is rounded to bf16 (relative error <= 2^-9); the f32 accumulation adds
  // a little on top. atol covers entries that cancel to near zero.
  auto check = examples::compare(got, ref, 1e-3, 4e-3);
  return examples::report(check, {.ms = ms, .flops = 2.0 * M * N * K});
}

int main(int argc, char** argv) {
  return examples::run_main([&] {
    auto s = examples::parse_args(argc, argv, "bf16 matrix multiply with f32 accumulation");
    // --small: N and K are not multiples of the 64x64x32 tiles (ragged edges).
    if (s.small) return run<64, 64, 32, 8>(s, 192, 160, 100, 4);
    // Without a GPU: a size the interpreter finishes in about ten seconds.
    if (s.on_interp) return run<64, 64, 32, 8>(s, 1536, 1536, 1536, 4);
    return run<128, 128, 64, 8>(s, 4096, 4096, 4096, 8);
  });
}
