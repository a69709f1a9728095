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
//   attention --varlen=100,1,4000[/K1,K2,K3] [--shape=_,H,_,KV]
//                                     sequences of these lengths packed as
//                                     FlashAttention's varlen API takes them
//                                     ([total, H, D], cumulative offsets);
//                                     keys as long as the queries unless
//                                     given after '/'
//
// On a GPU tiles, warps and stages are autotuned (tl::Autotuner over
// kernels::attention_tune_configs, the pick kept on disk for the next run;
// --tune does it on the interpreter too); TILEDSL_ATTN_CONFIG=
// BMxBN:warps:stages[:desc|:persistent][:xN] fixes them. The sweep, --small, the
// interpreter use kernels::attention_config, varlen runs
// kernels::varlen_attention_config.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <numeric>
#include <optional>
#include <sstream>

#include "common.h"
#include "kernels/attention.h"

namespace {

enum class DType { bf16, f16 };

struct Case {
  int B, H, N, D;
  bool causal;
  DType dtype;
  int KV = 0;  // key/value heads (0: H); H / KV query heads share one
  // Varlen: each sequence's query and key lengths (then B is their count
  // and N the longest query); empty: B sequences of N, [B, H, N, D].
  std::vector<int> lens_q{}, lens_k{};
  int kv_heads() const { return KV ? KV : H; }
  int group() const { return H / kv_heads(); }
  bool varlen() const { return !lens_q.empty(); }
};

// Where rows lie: [B, H, N, D], or (varlen) [total, H, D] with sequence b's
// tokens from its cumulative offset. A query row r, 0 <= r < rows(), is
// also row r of O in both layouts.
struct Geometry {
  const Case& c;
  std::vector<int> q_starts, k_starts;  // varlen: cumulative lengths, B + 1 each
  explicit Geometry(const Case& cs) : c(cs) {
    if (!c.varlen()) return;
    q_starts = k_starts = {0};
    for (size_t b = 0; b < c.lens_q.size(); ++b) {
      q_starts.push_back(q_starts.back() + c.lens_q[b]);
      k_starts.push_back(k_starts.back() + c.lens_k[b]);
    }
  }
  int q_len(int b) const { return c.varlen() ? c.lens_q[size_t(b)] : c.N; }
  int k_len(int b) const { return c.varlen() ? c.lens_k[size_t(b)] : c.N; }
  int rows() const { return c.varlen() ? q_starts.back() * c.H : c.B * c.H * c.N; }
  size_t kv_rows() const { return c.varlen() ? size_t(k_starts.back()) * c.kv_heads() : size_t(c.B) * c.kv_heads() * c.N; }
  // Query row r as (sequence, head, position).
  void decode(int r, int& b, int& h, int& i) const {
    if (!c.varlen()) {
      b = r / c.N / c.H, h = r / c.N % c.H, i = r % c.N;
      return;
    }
    int t = r / c.H;
    h = r % c.H;
    b = int(std::upper_bound(q_starts.begin(), q_starts.end(), t) - q_starts.begin()) - 1;
    i = t - q_starts[size_t(b)];
  }
  size_t kv_row(int b, int kh, int j) const {
    return c.varlen() ? size_t(k_starts[size_t(b)] + j) * c.kv_heads() + kh
                      : (size_t(b) * c.kv_heads() + kh) * c.N + j;
  }
  // Keys query i of sequence b sees: all, or (causal) those up to
  // i + k_len - q_len (the sequences' ends aligned).
  int keys_seen(int b, int i) const {
    if (!c.causal) return k_len(b);
    return std::clamp(i + k_len(b) - q_len(b) + 1, 0, k_len(b));
  }
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
  const int D = c.D;
  const Geometry g(c);
  Reference ref{std::vector<double>(rows.size() * D), std::vector<double>(rows.size() * D)};
  std::vector<double> scores;
  for (size_t r = 0; r < rows.size(); ++r) {
    int b, h, i;
    g.decode(rows[r], b, h, i);
    const int kh = h / c.group(), n_keys = g.keys_seen(b, i);
    scores.assign(size_t(n_keys), 0);
    double mx = -INFINITY, total = 0;
    for (int j = 0; j < n_keys; ++j) {
      double dotp = 0;
      size_t kr = g.kv_row(b, kh, j);
      for (int d = 0; d < D; ++d) dotp += q[size_t(rows[r]) * D + d] * k[kr * D + d];
      scores[size_t(j)] = dotp * sm_scale;
      mx = std::max(mx, scores[size_t(j)]);
    }
    for (int j = 0; j < n_keys; ++j) total += (scores[size_t(j)] = std::exp(scores[size_t(j)] - mx));
    // A query that sees no key: zeros (and nothing to err by).
    for (int d = 0; d < D && n_keys > 0; ++d) {
      double o = 0, o_abs = 0;
      for (int j = 0; j < n_keys; ++j) {
        double x = v[g.kv_row(b, kh, j) * D + d];
        o += scores[size_t(j)] * x;
        o_abs += scores[size_t(j)] * std::fabs(x);
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

// The kernel's name for a case (the tuner compiles under it too).
std::string kernel_name(const Case& c) {
  return std::string("attention_") + (c.varlen() ? "varlen_" : "") + dtype_name(c.dtype) + "_d" +
         std::to_string(c.D) + (c.causal ? "_causal" : "");
}

// Calls f.template operator()<T, D, CAUSAL>() for a case's element type,
// head dim and causality; returns what f returns.
template <class F>
int with_case_types(const Case& c, F&& f) {
  auto with_dtype = [&]<int D, bool CAUSAL>() {
    return c.dtype == DType::bf16 ? f.template operator()<tl::bf16, D, CAUSAL>()
                                  : f.template operator()<tl::f16, D, CAUSAL>();
  };
  if (c.D == 64) return c.causal ? with_dtype.template operator()<64, true>() : with_dtype.template operator()<64, false>();
  return c.causal ? with_dtype.template operator()<128, true>() : with_dtype.template operator()<128, false>();
}

// Compiles, runs and checks one case; returns the exit code (0 on PASS).
template <class T, int BM, int BN, int D, bool CAUSAL>
int run_case(examples::Setup& s, const Case& c, const kernels::AttentionConfig& cfg) {
  const std::string name = kernel_name(c);
  const Geometry g(c);
  std::optional<kernels::AttentionKernel<T, BM, BN, D, CAUSAL>> dense;
  std::optional<kernels::AttentionVarlenKernel<T, BM, BN, D, CAUSAL>> varlen;
  double compile_ms = examples::wall_ms([&] {
    if (c.varlen()) varlen.emplace(cfg, tl::CompileOptions{.name = name});
    else dense.emplace(cfg, tl::CompileOptions{.name = name});
  });
  std::string shape = c.varlen() ? "varlen B=" + std::to_string(c.B) + " H=" + std::to_string(c.H) +
                                       " KV=" + std::to_string(c.kv_heads()) + ", " +
                                       std::to_string(g.q_starts.back()) + " query and " +
                                       std::to_string(g.k_starts.back()) + " key tokens, longest query " +
                                       std::to_string(c.N)
                                 : "B=" + std::to_string(c.B) + " H=" + std::to_string(c.H) + " KV=" +
                                       std::to_string(c.kv_heads()) + " N=" + std::to_string(c.N);
  std::printf("attention: %s D=%d %s %s, tiles %dx%d, %d warps, %d stages%s on %s (tl::compile %.1f ms)\n",
              shape.c_str(), D, dtype_name(c.dtype), CAUSAL ? "causal" : "non-causal", BM, BN, cfg.num_warps,
              cfg.num_stages, c.varlen() ? "" : cfg.persistent ? ", persistent" : cfg.descriptors ? ", descriptors" : "", s.dev.name().c_str(), compile_ms);

  size_t n = size_t(g.rows()) * D, n_kv = std::max<size_t>(1, g.kv_rows() * D);
  auto hq = examples::random_vector<T>(n, 9), hk = examples::random_vector<T>(n_kv, 10),
       hv = examples::random_vector<T>(n_kv, 11);
  tl::Buffer q = s.dev.upload(hq), k = s.dev.upload(hk), v = s.dev.upload(hv);
  tl::Buffer o = s.dev.alloc<T>(n);
  const float sm_scale = 1.0f / std::sqrt(float(D));

  std::function<void()> launch;
  double flops = kernels::attention_flops(c.B, c.H, c.N, D, CAUSAL);
  tl::Buffer cu_q, cu_k;
  if (!c.varlen()) {
    launch = [&] { (*dense)(s.dev, q, k, v, o, c.B, c.H, c.N, sm_scale, c.group()); };
  } else {
    cu_q = s.dev.upload(g.q_starts), cu_k = s.dev.upload(g.k_starts);
    launch = [&] { (*varlen)(s.dev, q, k, v, o, cu_q, cu_k, c.B, c.H, c.N, sm_scale, c.group()); };
    // The score pairs each query sees, exactly.
    double pairs = 0;
    for (int b = 0; b < c.B; ++b)
      for (int i = 0; i < g.q_len(b); ++i) pairs += g.keys_seen(b, i);
    flops = 4.0 * c.H * D * pairs;
  }
  double ms = examples::time_ms(s, launch);
  if (examples::inspecting) return 0;  // --emit: the kernel was printed, nothing ran

  // Every query row when that is cheap, else 512 rows spread over all heads.
  int n_rows = g.rows();
  auto rows = examples::rows_to_check(n_rows, double(n_rows) * c.N * D <= 1 << 28 ? n_rows : 512);
  auto ref = reference(c, sm_scale, rows, examples::to_double(hq), examples::to_double(hk), examples::to_double(hv));
  auto ho = o.download<T>();
  std::vector<T> got(rows.size() * D);
  for (size_t r = 0; r < rows.size(); ++r) std::copy_n(&ho[size_t(rows[r]) * D], D, &got[r * D]);

  auto check = check_outputs(got, ref, error_bound(c.dtype));
  return examples::report(check, {.ms = ms, .flops = flops});
}

// Picks the template instantiation for a run-time case, its configuration
// tuned when `tune` (dense cases only).
int run(examples::Setup& s, const Case& c, bool tune = false) {
  int64_t tokens = c.varlen() ? std::max(std::accumulate(c.lens_q.begin(), c.lens_q.end(), int64_t(0)),
                                         std::accumulate(c.lens_k.begin(), c.lens_k.end(), int64_t(0)))
                              : int64_t(c.B) * c.N;
  if (tokens * c.H * c.D >= int64_t(1) << 31)
    throw tl::Error("attention: tokens*H*D = " + std::to_string(tokens * c.H * c.D) +
                    " elements; the kernel's offsets are 32-bit, expected fewer than 2^31");
  if (c.B * c.H > 65535)
    throw tl::Error("attention: B*H = " + std::to_string(c.B * c.H) + " programs on grid axis 1, expected <= 65535");
  auto cfg = c.varlen() ? kernels::varlen_attention_config(c.D, s.dev.target())
                        : kernels::attention_config(c.D, s.dev.target(), c.N, c.causal);
  if (tune && !c.varlen()) {
    // One results file per head dim and causality: the key (N, the group)
    // does not tell them apart.
    const auto configs = kernels::attention_tune_configs(c.D, s.dev.target());
    const std::string tuner = "attention_example_d" + std::to_string(c.D) + (c.causal ? "_causal" : "");
    double ms = examples::wall_ms([&] {
      with_case_types(c, [&]<class T, int D, bool CAUSAL>() {
        cfg = kernels::tune_attention<T, D, CAUSAL>(s.dev, tuner, configs, c.B, c.H, c.N, c.group(),
                                                   {.name = kernel_name(c)});
        return 0;
      });
    });
    std::printf("attention: autotuned over %zu configurations (BMxBN:warps:stages): %s (%.1f ms)\n", configs.size(),
                cfg.str().c_str(), ms);
  }
  return kernels::with_tiles(cfg, [&]<int BM, int BN>() {
    return with_case_types(c, [&]<class T, int D, bool CAUSAL>() { return run_case<T, BM, BN, D, CAUSAL>(s, c, cfg); });
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
  // Variable lengths packed (issue 14): an empty sequence, one token, a
  // sequence longer than any other case's, keys longer than queries and
  // shorter (causal queries that see no key get zeros), grouped heads.
  for (DType dt : {DType::bf16, DType::f16})
    for (int D : {64, 128})
      for (bool causal : {false, true})
        for (int keys : {0, 1}) {
          Case c{0, 4, 0, D, causal, dt, 2};
          c.lens_q = s.on_interp ? std::vector<int>{17, 0, 300, 1, 128} : std::vector<int>{17, 0, 3000, 1, 1000, 4096};
          c.lens_k = c.lens_q;
          if (keys == 1) c.lens_k = s.on_interp ? std::vector<int>{40, 5, 250, 0, 200} : std::vector<int>{40, 5, 2500, 0, 1500, 4000};
          c.B = int(c.lens_q.size());
          c.N = *std::max_element(c.lens_q.begin(), c.lens_q.end());
          ++cases;
          failures += run(s, c);
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

// Parses "L1,L2,...[/K1,K2,...]" (query lengths, key lengths; >= 0, at
// least one query token) into `c`: B the count, N the longest query. H and
// KV stay as --shape gave them, else 4 query heads over 4.
void parse_varlen(const std::string& text, Case& c, bool shape_given) {
  auto list = [&](const std::string& part) {
    std::vector<int> out;
    std::stringstream in(part);
    for (std::string item; std::getline(in, item, ',');) {
      char* end = nullptr;
      long v = std::strtol(item.c_str(), &end, 10);
      if (item.empty() || *end || v < 0 || v > (1 << 24))
        throw tl::Error("--varlen: expected lengths L1,L2,...[/K1,K2,...] (integers from 0 to 2^24), found '" + text + "'");
      out.push_back(int(v));
    }
    return out;
  };
  size_t slash = text.find('/');
  c.lens_q = list(text.substr(0, slash));
  c.lens_k = slash == std::string::npos ? c.lens_q : list(text.substr(slash + 1));
  if (c.lens_k.size() != c.lens_q.size())
    throw tl::Error("--varlen: " + std::to_string(c.lens_q.size()) + " query lengths but " +
                    std::to_string(c.lens_k.size()) + " key lengths in '" + text + "'");
  c.B = int(c.lens_q.size());
  c.N = *std::max_element(c.lens_q.begin(), c.lens_q.end());
  if (c.N < 1) throw tl::Error("--varlen: expected at least one query token, found '" + text + "'");
  if (!shape_given) c.H = 4, c.KV = 0;
}

}  // namespace

int main(int argc, char** argv) {
  return examples::run_main([&] {
    for (int i = 1; i < argc; ++i)
      if (std::string_view(argv[i]) == "--help" || std::string_view(argv[i]) == "-h")
        std::fprintf(stderr,
                     "attention options: [--dtype=bf16|f16] [--causal=0|1] [--d=64|128] [--shape=B,H,N[,KV]] [--sweep]\n"
                     "                   [--varlen=L1,L2,...[/K1,K2,...]] [--tune]\n"
                     "  KV: key/value heads (grouped-query attention; default H)\n"
                     "  varlen: sequences of query lengths Li (keys Ki, default Li) packed [total, H, D];\n"
                     "          H and KV from --shape (its B and N unused), else 4 heads\n"
                     "  default: bf16, D 64, causal and non-causal, B=4 H=32 N=4096 (interpreter: 2,4,512)\n");
    std::string dtype = examples::take_option(argc, argv, "--dtype", "bf16");
    std::string causal = examples::take_option(argc, argv, "--causal");
    std::string head_dim = examples::take_option(argc, argv, "--d", "64");
    std::string shape = examples::take_option(argc, argv, "--shape");
    std::string varlen = examples::take_option(argc, argv, "--varlen");
    bool run_sweep = !examples::take_option(argc, argv, "--sweep").empty();
    bool force_tune = !examples::take_option(argc, argv, "--tune").empty();
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
    if (!varlen.empty()) parse_varlen(varlen, c, !shape.empty());
    c.D = std::stoi(head_dim);
    c.dtype = dtype == "bf16" ? DType::bf16 : DType::f16;
    // Tuned on a GPU unless TILEDSL_ATTN_CONFIG fixes the configuration.
    const char* fixed = std::getenv("TILEDSL_ATTN_CONFIG");
    bool tune = !examples::inspecting && (force_tune || (!s.small && !s.on_interp && !(fixed && *fixed)));
    int failures = 0;
    for (bool is_causal : {false, true}) {
      if (causal != "" && is_causal != (causal == "1")) continue;
      c.causal = is_causal;
      failures += run(s, c, tune);
    }
    // Each run printed its own PASS/FAIL line; the exit code covers all.
    return failures ? 1 : 0;
  });
}
