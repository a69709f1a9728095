// gemm: C = A @ B with A [M, K] and B [K, N] in bf16 or f16, f32
// accumulation and C [M, N] in the input type, checked against a reference
// computed in double from the same inputs. The kernel (grouped program
// order, masked ragged edges, strides as parameters) is in kernels/gemm.h,
// shared with bench/gemm.cpp.
//
// Options, on top of those of common.h:
//   --dtype=bf16|f16      element type of A, B and C (default bf16)
//   --a=row|col           A stored row-major ([M, K], the default) or
//   --b=row|col           column-major; likewise B ([K, N]). Only the
//                         strides passed to the kernel change.
//   --mnk=M,N,K           problem size (any positive sizes, ragged included)
//   --config=BMxBNxBK:warps:stages[:desc|:persistent|:streamk][:cN][:xN][:ws|:nows]  tile configuration (kernels/gemm.h;
//                                    :desc runs the tensor-descriptor kernel, :persistent
//                                    its persistent form, :streamk that with the last
//                                    round's tiles split along K, :cN a program over a
//                                    cluster of N CTAs (B's block multicast), :xN N programs a
//                                    multiprocessor, :ws / :nows
//                                    demand or forbid warp specialization).
//                         Without it a GPU run is autotuned: tl::Autotuner
//                         measures kernels::gemm_tune_configs for the
//                         problem (the winner kept on disk for the next
//                         run) and prints its pick; the interpreter and
//                         --small use small tiles, the sweep the
//                         target's default.
//   --tune                autotune there too (the interpreter, --small)
//   --sweep               correctness over ragged shapes x both dtypes x the
//                         four A/B layouts, one PASS/FAIL line each, then an
//                         overall PASS only if every case passed (small
//                         shapes only on the interpreter)
#include <functional>
#include <memory>
#include <optional>

#include "common.h"
#include "kernels/gemm.h"
#ifdef TILEDSL_GEMM_AOT
#include "aot/gemm_configs.h"
#include "gemm_aot_kernels.h"  // generated from aot/gemm_kernels.cpp
#endif

namespace {

struct Shape {
  int m, n, k;
};

// One problem: its size, its dtype and how A and B are stored.
struct Case {
  Shape size;
  std::string dtype = "bf16";  // bf16 | f16
  bool a_col = false;          // A stored column-major
  bool b_col = false;          // B stored column-major
  std::string str() const {
    return dtype + " A=" + (a_col ? "col" : "row") + " B=" + (b_col ? "col" : "row") + " M=" +
           std::to_string(size.m) + " N=" + std::to_string(size.n) + " K=" + std::to_string(size.k);
  }
};

struct Outcome {
  examples::Check check;
  double ms = 0;
};

// `logical` is a row-major [rows, cols] matrix; returns it stored
// column-major when `col_major` (element (r, c) at c * rows + r).
template <class T>
std::vector<T> store_as(const std::vector<T>& logical, int rows, int cols, bool col_major) {
  if (!col_major) return logical;
  std::vector<T> stored(logical.size());
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) stored[size_t(c) * rows + r] = logical[size_t(r) * cols + c];
  return stored;
}

// One launch of the gemm: A, B, C, M, N, K, stride_am, stride_ak,
// stride_bk, stride_bn (C row-major): a fixed configuration's kernel or the
// autotuner's pick.
using GemmLaunch =
    std::function<void(const tl::Buffer&, const tl::Buffer&, const tl::Buffer&, int, int, int, int, int, int, int)>;

GemmLaunch fixed_launch(examples::Setup& s, const tl::Kernel& k, const kernels::GemmConfig& cfg) {
  auto ws = std::make_shared<kernels::GemmWorkspace>();
  return [&s, k, cfg, ws](const tl::Buffer& a, const tl::Buffer& b, const tl::Buffer& out, int M, int N, int K, int sam,
                          int sak, int sbk, int sbn) {
    kernels::launch_gemm(s.dev, k, cfg, a, b, out, M, N, K, sam, sak, sbk, sbn, N, 1, *ws);
  };
}

// Runs `launch` on one case and checks up to `max_rows` rows of C (all of
// them when M is that small) against a double reference. `timed`: time the
// launch like every example (warm-up + mean on a GPU) rather than launch it
// once.
template <class T>
Outcome run_case(examples::Setup& s, const GemmLaunch& gemm, const Case& c, int max_rows, bool timed) {
  const int M = c.size.m, N = c.size.n, K = c.size.k;
  // The values are the logical matrices, row-major; the buffers hold them
  // in the layout under test.
  auto ha = examples::random_vector<T>(size_t(M) * K, 7);  // [M, K]
  auto hb = examples::random_vector<T>(size_t(K) * N, 8);  // [K, N]
  tl::Buffer a = s.dev.upload(store_as(ha, M, K, c.a_col));
  tl::Buffer b = s.dev.upload(store_as(hb, K, N, c.b_col));
  tl::Buffer out = s.dev.alloc<T>(size_t(M) * N);  // row-major [M, N]
  const int stride_am = c.a_col ? 1 : K, stride_ak = c.a_col ? M : 1;
  const int stride_bk = c.b_col ? 1 : N, stride_bn = c.b_col ? K : 1;

  auto launch = [&] { gemm(a, b, out, M, N, K, stride_am, stride_ak, stride_bk, stride_bn); };
  Outcome o;
  if (timed) {
    o.ms = examples::time_ms(s, launch);
  } else {
    launch();
    s.dev.synchronize();
  }
  if (examples::inspecting) return o;  // nothing ran

  auto rows = examples::rows_to_check(M, max_rows);
  auto da = examples::to_double(ha), db = examples::to_double(hb);
  auto hc = out.download<T>();
  std::vector<double> ref(rows.size() * N, 0.0);
  std::vector<T> got(rows.size() * N);
  for (size_t r = 0; r < rows.size(); ++r) {
    double* ref_row = &ref[r * N];
    for (int kk = 0; kk < K; ++kk) {
      double a_ik = da[size_t(rows[r]) * K + kk];
      const double* b_row = &db[size_t(kk) * N];
      for (int j = 0; j < N; ++j) ref_row[j] += a_ik * b_row[j];
    }
    std::copy_n(&hc[size_t(rows[r]) * N], N, &got[r * N]);
  }
  // C is rounded to bf16 (relative error <= 2^-9) or f16 (2^-11); the f32
  // accumulation adds a little on top. atol covers entries that cancel to
  // near zero. Well inside the 1e-2 relative bound of the issue; NaN never
  // passes.
  o.check = examples::compare(got, ref, 1e-3, 4e-3);
  return o;
}

// The kernel for `cfg`: traced by tl::compile here or, in the ahead-of-time
// build (gemm_aot, linked without the compiler), the precompiled one, which
// exists for the configurations of aot/gemm_configs.h.
template <class T>
tl::Kernel gemm_kernel(const std::string& dtype, const kernels::GemmConfig& cfg) {
#ifdef TILEDSL_GEMM_AOT
  return gemm_aot_kernels(examples::aot_gemm_symbol(dtype, cfg));
#else
  return kernels::compile_gemm<T>(cfg);
#endif
}

// Calls body.template operator()<T>() for the element type named `dtype`.
template <class Body>
decltype(auto) with_dtype(const std::string& dtype, Body&& body) {
  if (dtype == "bf16") return body.template operator()<tl::bf16>();
  if (dtype == "f16") return body.template operator()<tl::f16>();
  throw tl::Error("--dtype: expected bf16 or f16, found '" + dtype + "'");
}

void check_size(const Shape& s) {
  if (s.m < 1 || s.n < 1 || s.k < 1)
    throw tl::Error("--mnk: expected positive M, N and K, found " + std::to_string(s.m) + "," + std::to_string(s.n) +
                    "," + std::to_string(s.k));
  // The kernel's offsets are i32.
  for (int64_t elems : {int64_t(s.m) * s.k, int64_t(s.k) * s.n, int64_t(s.m) * s.n})
    if (elems > INT32_MAX)
      throw tl::Error("--mnk: a matrix of " + std::to_string(elems) + " elements needs 64-bit offsets (at most 2^31-1)");
}

// The timed run and its report (every row of C checked when the reference
// is cheap, else 256 rows spread over it).
template <class T>
int check_and_time(examples::Setup& s, const GemmLaunch& gemm, const Case& c) {
  const auto& z = c.size;
  int max_rows = double(z.m) * z.n * z.k <= 1 << 30 ? z.m : 256;
  auto o = run_case<T>(s, gemm, c, max_rows, true);
  return examples::report(o.check, {.ms = o.ms, .flops = 2.0 * z.m * z.n * z.k});
}

// One run of configuration `cfg`: the configuration line, then the report
// of examples/common.h.
int run_one(examples::Setup& s, const kernels::GemmConfig& cfg, const Case& c) {
  check_size(c.size);
  return with_dtype(c.dtype, [&]<class T>() {
    tl::Kernel k;
    double compile_ms = examples::wall_ms([&] { k = gemm_kernel<T>(c.dtype, cfg); });
#ifdef TILEDSL_GEMM_AOT
    const char* made = "precompiled";
#else
    const char* made = "tl::compile";
#endif
    std::printf("gemm: %s, config %s (tiles BMxBNxBK:warps:stages), GROUP_M=%d on %s (%s %.1f ms)\n",
                c.str().c_str(), cfg.str().c_str(), kernels::kGemmGroupM, s.dev.name().c_str(), made, compile_ms);
    return check_and_time<T>(s, fixed_launch(s, k, cfg), c);
  });
}

#ifndef TILEDSL_GEMM_AOT
// One run through tl::Autotuner over kernels::gemm_tune_configs for the
// device's target: the first launch of the problem compiles the candidates
// in parallel and measures each (or reads the pick a previous run kept on
// disk); the line names the pick, then the report.
int run_tuned(examples::Setup& s, const Case& c) {
  check_size(c.size);
  return with_dtype(c.dtype, [&]<class T>() {
    const auto configs = kernels::gemm_tune_configs(s.dev.target());
    tl::Autotuner tuner = kernels::gemm_tuner<T>("gemm_example_" + c.dtype, configs, s.dev.processor_count());
    const int M = c.size.m, N = c.size.n, K = c.size.k;
    const tl::TuneGrid grid = kernels::gemm_tune_grid(M, N, s.dev);
    GemmLaunch launch = [&](const tl::Buffer& a, const tl::Buffer& b, const tl::Buffer& out, int m, int n, int k,
                            int sam, int sak, int sbk, int sbn) {
      tuner(s.dev, grid, a, b, out, m, n, k, sam, sak, sbk, sbn, n, 1);
    };
    // The pick, on buffers of the problem's shape and strides (the tuner
    // keys by the integer arguments; what the buffers hold does not matter).
    tl::Buffer a = s.dev.alloc<T>(size_t(M) * K), b = s.dev.alloc<T>(size_t(K) * N);
    tl::Buffer out = s.dev.alloc<T>(size_t(M) * N);
    const int sam = c.a_col ? 1 : K, sak = c.a_col ? M : 1, sbk = c.b_col ? 1 : N, sbn = c.b_col ? K : 1;
    const tl::TuneConfig* pick = nullptr;
    double tune_ms =
        examples::wall_ms([&] { pick = &tuner.pick(s.dev, grid, {a, b, out, M, N, K, sam, sak, sbk, sbn, N, 1}); });
    std::string how = tuner.measured() ? "measured " + std::to_string(tuner.measured()) + " of " +
                                             std::to_string(configs.size()) + " configurations"
                                       : "kept from an earlier run";
    std::printf("gemm: %s, autotuned: config %s (tiles BMxBNxBK:warps:stages), GROUP_M=%d on %s (%s, %.1f ms)\n",
                c.str().c_str(), pick->name.c_str(), kernels::kGemmGroupM, s.dev.name().c_str(), how.c_str(),
                tune_ms);
    return check_and_time<T>(s, launch, c);
  });
}
#endif

// Every shape x dtype x A/B layout; one line per case, a total at the end.
int run_sweep(examples::Setup& s, const kernels::GemmConfig& cfg) {
  std::vector<Shape> shapes = {{1, 1, 1}, {17, 33, 65}, {129, 257, 100}, {1, 130, 77}};
  if (!s.on_interp) {
    shapes.push_back({1000, 1000, 1000});
    shapes.push_back({4096, 4096, 4096});
  }
  std::printf("gemm sweep on %s, config %s, GROUP_M=%d\n", s.dev.name().c_str(), cfg.str().c_str(),
              kernels::kGemmGroupM);
  int cases = 0, failed = 0;
  for (std::string dtype : {"bf16", "f16"}) {
    with_dtype(dtype, [&]<class T>() {
      GemmLaunch gemm = fixed_launch(s, gemm_kernel<T>(dtype, cfg), cfg);
      for (const Shape& size : shapes) {
        for (int layout = 0; layout < 4; ++layout) {
          Case c{size, dtype, bool(layout & 2), bool(layout & 1)};
          // Big problems: 64 rows spread over C keep the double reference
          // at a few seconds per case.
          int max_rows = double(size.m) * size.n * size.k <= 1 << 30 ? size.m : 64;
          ++cases;
          try {
            auto o = run_case<T>(s, gemm, c, max_rows, false);
            const auto& ch = o.check;
            if (ch.mismatches) {
              ++failed;
              std::printf("FAIL %-40s max abs error %.3g; %zu of %zu mismatch, first at %zu: got %.6g, expected %.6g\n",
                          c.str().c_str(), ch.max_abs_error, ch.mismatches, ch.count, ch.first_bad, ch.first_got,
                          ch.first_ref);
            } else {
              std::printf("PASS %-40s max abs error %.3g over %zu elements\n", c.str().c_str(), ch.max_abs_error,
                          ch.count);
            }
          } catch (const std::exception& e) {
            ++failed;
            std::printf("FAIL %-40s error: %s\n", c.str().c_str(), e.what());
          }
          std::fflush(stdout);
        }
      }
    });
  }
  std::printf("%d of %d cases passed\n%s\n", cases - failed, cases, failed ? "FAIL" : "PASS");
  return failed ? 1 : 0;
}

std::optional<Shape> parse_mnk(std::string_view text) {
  Shape s{};
  int consumed = 0;
  std::string t(text);
  if (std::sscanf(t.c_str(), "%d,%d,%d%n", &s.m, &s.n, &s.k, &consumed) != 3 || size_t(consumed) != t.size())
    return std::nullopt;
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  return examples::run_main([&] {
    // This example's own options, taken out of argv before
    // examples::parse_args sees the rest.
    for (int i = 1; i < argc; ++i)
      if (std::string_view(argv[i]) == "--help" || std::string_view(argv[i]) == "-h")
        std::fprintf(stderr,
                     "gemm options: [--dtype=bf16|f16] [--a=row|col] [--b=row|col] [--mnk=M,N,K]\n"
                     "              [--config=BMxBNxBK:warps:stages[:desc|:persistent|:streamk][:cN][:xN][:ws|:nows]] [--tune] [--sweep]\n"
                     "  tiles with an instantiation: %s\n",
                     kernels::gemm_tiles_list().c_str());
    auto layout_is_col = [](const std::string& v, const char* opt) {
      if (v != "row" && v != "col") throw tl::Error(std::string(opt) + ": expected row or col, found '" + v + "'");
      return v == "col";
    };
    Case c;
    c.dtype = examples::take_option(argc, argv, "--dtype", "bf16");
    if (c.dtype != "bf16" && c.dtype != "f16") throw tl::Error("--dtype: expected bf16 or f16, found '" + c.dtype + "'");
    c.a_col = layout_is_col(examples::take_option(argc, argv, "--a", "row"), "--a");
    c.b_col = layout_is_col(examples::take_option(argc, argv, "--b", "row"), "--b");
    std::optional<Shape> mnk;
    if (auto text = examples::take_option(argc, argv, "--mnk"); !text.empty()) {
      mnk = parse_mnk(text);
      if (!mnk) throw tl::Error("--mnk: expected M,N,K (three integers), found '" + text + "'");
      check_size(*mnk);
    }
    std::optional<kernels::GemmConfig> config;
    if (auto text = examples::take_option(argc, argv, "--config"); !text.empty())
      config = kernels::parse_gemm_config(text);
    bool sweep = examples::take_option(argc, argv, "--sweep") == "1";
    bool tune = examples::take_option(argc, argv, "--tune") == "1";
    auto s = examples::parse_args(argc, argv, "matrix multiply, bf16 or f16 with f32 accumulation");

    // The sweep checks one configuration: the target's default
    // (kernels::default_gemm_config: on sm_90a the persistent kernel on
    // tensor copies) on a GPU. The interpreter (and --small, which CI runs
    // on it) uses 64x64x32 tiles and 4 warps, so that small problems still
    // span several tiles.
    const bool target_default = !config && !s.small && !s.on_interp;
    kernels::GemmConfig cfg = config           ? *config
                              : target_default ? kernels::default_gemm_config(s.dev.target())
                                               : kernels::small_gemm_config();
    if (sweep && !examples::inspecting) return run_sweep(s, cfg);
    // --small: N and K are not multiples of the 64x64x32 tiles (ragged
    // edges). Without a GPU: a size the interpreter finishes in about ten
    // seconds.
    c.size = mnk ? *mnk
             : s.small    ? Shape{192, 160, 100}
             : s.on_interp ? Shape{1536, 1536, 1536}
                           : Shape{4096, 4096, 4096};
    // A GPU run without --config is autotuned (the ahead-of-time form
    // carries the default configurations only).
#ifdef TILEDSL_GEMM_AOT
    if (tune) throw tl::Error("--tune: the ahead-of-time form carries the default configurations only");
#else
    if (!config && !examples::inspecting && (tune || target_default)) return run_tuned(s, c);
#endif
    // Without --config on a GPU (the ahead-of-time form), the default for
    // the shape's rows (kernels::default_gemm_config).
    if (target_default && !c.a_col && !c.b_col)
      cfg = kernels::default_gemm_config(s.dev.target(), c.size.n, c.size.k, 2);  // bf16, f16
    return run_one(s, cfg, c);
  });
}
