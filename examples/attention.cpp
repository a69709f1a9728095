// attention: flash-attention forward, O = softmax(Q K^T * sm_scale) V, with
// Q, K, V, O of shape [B, H, N, D] in bf16 or f16 (the kernel is in
// kernels/attention.h, shared with bench/attention.cpp), checked against a
// double-precision reference.
//
//   attention                         B=4 H=32 N=4096 D=64 bf16, causal and not
//   attention --dtype=f16 --d=128 --causal=1 --shape=2,8,1000
//   attention --sweep                 both dtypes, causal and not, D 64 and
//                                     128, N in {1, 17, 128, 1000, 4096}
//   attention --small                 the CI size (interpreter, seconds)
//
// Tiles, warps and stages come from kernels::attention_config
// (TILEDSL_ATTN_CONFIG=BMxBN:warps:stages[:desc] overrides them).
#include <cstdint>
#include <optional>

#include "common.h"
#include "kernels/attention.h"

namespace {

enum class DType { bf16, f16 };

struct Case {
  int B, H, N, D;
  bool causal;
  DType dtype;
  int KV = 0;  // key/value heads (0: H); H / KV query heads share one
  int kv_heads() const { return KV ? KV : H; }
  int group() const { return H / kv_heads(); }
};

const char* dtype_name(DType t) { return t == DType::bf16 ? "bf16" : "f16"; }

// softmax(Q K^T * scale) V in double for the given query rows (flattened
// over [B * H, N]), rows.size() x D values in `out`; and in `magnitude` the
// same weighted mean of |V| (sum_j p_j |v_j| / sum_j p_j): the size of the
// terms each output sums, which bounds its rounding error (below).
struct Reference {
  std::vector<double> out, magnitude;
};

Reference reference(const Case& c, float sm_scale, const std::vector<int>& rows, const std::vector<double>& q,
                    const std::vector<double>& k, const std::vector<double>& v) {
  const int N = c.N, D = c.D;
  Reference ref{std::vector<double>(rows.size() * D), std::vector<double>(rows.size() * D)};
  std::vector<double> scores(N);
  for (size_t r = 0; r < rows.size(); ++r) {
    size_t base = size_t(rows[r] / N) * N * D;                  // this head's [N, D] of Q
    size_t kv_base = size_t(rows[r] / N / c.group()) * N * D;  // its key/value head's
    int i = rows[r] % N;
    int n_keys = c.causal ? i + 1 : N;
    double mx = -INFINITY, total = 0;
    for (int j = 0; j < n_keys; ++j) {
      double dotp = 0;
      for (int d = 0; d < D; ++d) dotp += q[base + size_t(i) * D + d] * k[kv_base + size_t(j) * D + d];
      scores[j] = dotp * sm_scale;
      mx = std::max(mx, scores[j]);
    }
    for (int j = 0; j < n_keys; ++j) total += (scores[j] = std::exp(scores[j] - mx));
    for (int d = 0; d < D; ++d) {
      double o = 0, o_abs = 0;
      for (int j = 0; j < n_keys; ++j) {
        o += scores[j] * v[kv_base + size_t(j) * D + d];
        o_abs += scores[j] * std::fabs(v[kv_base + size_t(j) * D + d]);
      }
      ref.out[r * D + d] = o / total;
      ref.magnitude[r * D + d] = o_abs / total;
    }
  }
  return ref;
}

// Relative error bound: 1e-2 for bf16 (the bound), 5e-3 for f16
// (8x finer rounding). An output is a weighted mean of V that may cancel to
// near 0, so its error is relative to the terms it sums: an element passes
// when |got - ref| <= bound * (|ref| + magnitude). Rounding P to T for the
// second product errs by at most 2^-9 (bf16) of each term, and rounding the
// output by 2^-9 of |ref|, so a correct kernel stays under 2^-8 * (|ref| +
// magnitude), 2.5x inside the bf16 bound; a missing or extra key moves an
// output by about 1/N of the magnitude. NaN never passes.
double error_bound(DType t) { return t == DType::bf16 ? 1e-2 : 5e-3; }

// Checks every element against its bound; prints the worst error as a
// fraction of its bound (how much room a correct kernel leaves).
template <class T>
examples::Check check_outputs(const std::vector<T>& got, const Reference& ref, double bound) {
  examples::Check c;
  c.count = ref.out.size();
  double worst = 0;
  for (size_t i = 0; i < ref.out.size(); ++i) {
    double g = double(float(got[i]));
    double err = std::fabs(g - ref.out[i]);
    double limit = bound * (std::fabs(ref.out[i]) + ref.magnitude[i]);
    if (!(err <= limit) && c.mismatches++ == 0) {
      c.first_bad = i;
      c.first_got = g;
      c.first_ref = ref.out[i];
    }
    c.max_abs_error = std::isnan(err) ? INFINITY : std::max(c.max_abs_error, err);
    worst = std::isnan(err) ? INFINITY : std::max(worst, err / limit);
  }
  std::printf("worst error %.2f of its bound (%.0e relative to |ref| + weighted mean of |V|)\n", worst, bound);
  return c;
}

// Compiles, runs and checks one case; returns the exit code (0 on PASS).
template <class T, int BM, int BN, int D, bool CAUSAL>
int run_case(examples::Setup& s, const Case& c, const kernels::AttentionConfig& cfg) {
  std::string name = std::string("attention_") + dtype_name(c.dtype) + "_d" + std::to_string(D) +
                     (CAUSAL ? "_causal" : "");
  std::optional<kernels::AttentionKernel<T, BM, BN, D, CAUSAL>> kernel;
  double compile_ms = examples::wall_ms([&] { kernel.emplace(cfg, tl::CompileOptions{.name = name}); });
  std::printf("attention: B=%d H=%d KV=%d N=%d D=%d %s %s, tiles %dx%d, %d warps, %d stages%s on %s (tl::compile %.1f ms)\n",
              c.B, c.H, c.kv_heads(), c.N, D, dtype_name(c.dtype), CAUSAL ? "causal" : "non-causal", BM, BN, cfg.num_warps,
              cfg.num_stages, cfg.descriptors ? ", descriptors" : "", s.dev.name().c_str(), compile_ms);

  size_t n = size_t(c.B) * c.H * c.N * D, n_kv = size_t(c.B) * c.kv_heads() * c.N * D;
  auto hq = examples::random_vector<T>(n, 9), hk = examples::random_vector<T>(n_kv, 10),
       hv = examples::random_vector<T>(n_kv, 11);
  tl::Buffer q = s.dev.upload(hq), k = s.dev.upload(hk), v = s.dev.upload(hv);
  tl::Buffer o = s.dev.alloc<T>(n);
  const float sm_scale = 1.0f / std::sqrt(float(D));

  double ms = examples::time_ms(s, [&] { (*kernel)(s.dev, q, k, v, o, c.B, c.H, c.N, sm_scale, c.group()); });
  if (examples::inspecting) return 0;  // --emit: the kernel was printed, nothing ran

  // Every query row when that is cheap, else 512 rows spread over all heads.
  int n_rows = c.B * c.H * c.N;
  auto rows = examples::rows_to_check(n_rows, double(n_rows) * c.N * D <= 1 << 28 ? n_rows : 512);
  auto ref = reference(c, sm_scale, rows, examples::to_double(hq), examples::to_double(hk), examples::to_double(hv));
  auto ho = o.download<T>();
  std::vector<T> got(rows.size() * D);
  for (size_t r = 0; r < rows.size(); ++r) std::copy_n(&ho[size_t(rows[r]) * D], D, &got[r * D]);

  auto check = check_outputs(got, ref, error_bound(c.dtype));
  return examples::report(check, {.ms = ms, .flops = kernels::attention_flops(c.B, c.H, c.N, D, CAUSAL)});
}

// Picks the template instantiation for a run-time case.
int run(examples::Setup& s, const Case& c) {
  if (int64_t(c.B) * c.H * c.N * c.D >= int64_t(1) << 31)
    throw tl::Error("attention: B*H*N*D = " + std::to_string(int64_t(c.B) * c.H * c.N * c.D) +
                    " elements; the kernel's offsets are 32-bit, expected fewer than 2^31");
  if (c.B * c.H > 65535)
    throw tl::Error("attention: B*H = " + std::to_string(c.B * c.H) + " programs on grid axis 1, expected <= 65535");
  auto cfg = kernels::attention_config(c.D, s.dev.target());
  return kernels::with_tiles(cfg, [&]<int BM, int BN>() {
    auto with_dtype = [&]<int D, bool CAUSAL>() {
      return c.dtype == DType::bf16 ? run_case<tl::bf16, BM, BN, D, CAUSAL>(s, c, cfg)
                                    : run_case<tl::f16, BM, BN, D, CAUSAL>(s, c, cfg);
    };
    if (c.D == 64) return c.causal ? with_dtype.template operator()<64, true>() : with_dtype.template operator()<64, false>();
    return c.causal ? with_dtype.template operator()<128, true>() : with_dtype.template operator()<128, false>();
  });
}

// The correctness matrix of issue 4: both dtypes, causal and not, D 64 and
// 128, ragged N; then grouped- and multi-query heads (issue 14). Small B*H (H = 3 is not a power of two) keeps the double
// reference quick. The interpreter runs N <= 300 on one batch (300: several
// query blocks and key blocks, the last ones partial), in about a second.
int sweep(examples::Setup& s) {
  std::vector<int> lengths = s.on_interp ? std::vector<int>{1, 17, 128, 300} : std::vector<int>{1, 17, 128, 1000, 4096};
  int B = s.on_interp ? 1 : 2, H = s.on_interp ? 2 : 3;
  int cases = 0, failures = 0;
  for (DType dt : {DType::bf16, DType::f16})
    for (int D : {64, 128})
      for (bool causal : {false, true})
        for (int N : lengths) {
          ++cases;
          failures += run(s, Case{B, H, N, D, causal, dt});
        }
  // Grouped-query (4 query heads over 2 key/value heads) and multi-query
  // (over 1), ragged N.
  for (DType dt : {DType::bf16, DType::f16})
    for (int D : {64, 128})
      for (bool causal : {false, true})
        for (int kv : {2, 1}) {
          ++cases;
          failures += run(s, Case{B, 4, s.on_interp ? 300 : 1000, D, causal, dt, kv});
        }
  if (examples::inspecting) return 0;
  std::printf("sweep: %d cases, %d failed\n%s\n", cases, failures, failures ? "FAIL" : "PASS");
  return failures ? 1 : 0;
}

// Parses "B,H,N" or "B,H,N,KV" (all positive; KV key/value heads divide H).
Case parse_shape(const std::string& text) {
  Case c{0, 0, 0, 64, false, DType::bf16};
  char extra;
  int fields = std::sscanf(text.c_str(), "%d,%d,%d,%d%c", &c.B, &c.H, &c.N, &c.KV, &extra);
  if ((fields != 3 && fields != 4) || c.B < 1 || c.H < 1 || c.N < 1 || (fields == 4 && (c.KV < 1 || c.H % c.KV)))
    throw tl::Error("--shape: expected B,H,N or B,H,N,KV (positive integers, KV dividing H; e.g. 4,32,4096 or "
                    "4,32,4096,8), found '" + text + "'");
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  return examples::run_main([&] {
    for (int i = 1; i < argc; ++i)
      if (std::string_view(argv[i]) == "--help" || std::string_view(argv[i]) == "-h")
        std::fprintf(stderr,
                     "attention options: [--dtype=bf16|f16] [--causal=0|1] [--d=64|128] [--shape=B,H,N[,KV]] [--sweep]\n"
                     "  KV: key/value heads (grouped-query attention; default H)\n"
                     "  default: bf16, D 64, causal and non-causal, B=4 H=32 N=4096 (interpreter: 2,4,512)\n");
    std::string dtype = examples::take_option(argc, argv, "--dtype", "bf16");
    std::string causal = examples::take_option(argc, argv, "--causal");
    std::string head_dim = examples::take_option(argc, argv, "--d", "64");
    std::string shape = examples::take_option(argc, argv, "--shape");
    bool run_sweep = !examples::take_option(argc, argv, "--sweep").empty();
    auto s = examples::parse_args(argc, argv, "flash-attention forward");

    if (dtype != "bf16" && dtype != "f16") throw tl::Error("--dtype: expected bf16 or f16, found '" + dtype + "'");
    if (causal != "" && causal != "0" && causal != "1")
      throw tl::Error("--causal: expected 0 or 1, found '" + causal + "'");
    if (head_dim != "64" && head_dim != "128") throw tl::Error("--d: expected 64 or 128, found '" + head_dim + "'");
    if (run_sweep) return sweep(s);

    Case c = !shape.empty() ? parse_shape(shape)
             : s.small      ? Case{1, 2, 128, 64, false, DType::bf16}
             : s.on_interp  ? Case{2, 4, 512, 64, false, DType::bf16}
                            : Case{4, 32, 4096, 64, false, DType::bf16};
    c.D = std::stoi(head_dim);
    c.dtype = dtype == "bf16" ? DType::bf16 : DType::f16;
    int failures = 0;
    for (bool is_causal : {false, true}) {
      if (causal != "" && is_causal != (causal == "1")) continue;
      c.causal = is_causal;
      failures += run(s, c);
    }
    // Each run printed its own PASS/FAIL line; the exit code covers all.
    return failures ? 1 : 0;
  });
}
