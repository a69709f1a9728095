// What every example shares, so each example file holds only its kernel, its
// reference and its sizes: command-line options (--device=NAME, --small,
// --target=T --emit=STAGE),
// deterministic random inputs, timing, the error check against a reference
// computed in double, and the PASS/FAIL line (exit code 0 on PASS, 1 on FAIL).
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "tiledsl/tiledsl.h"

namespace examples {

// ---------------------------------------------------------------------------
// Options and device.

// Set by parse_args under --emit: kernels are printed, not run.
inline bool inspecting = false;

struct Setup {
  tl::Device dev;
  bool small = false;      // --small: the sizes CI runs on the interpreter
  bool on_interp = false;  // the CPU interpreter (slow): pick modest sizes
  int reps = 20;           // --reps=N: launches timed on a GPU
};

// Parses `--device=NAME` (default: tl::Device::get(), the best available,
// which TILEDSL_DEVICE overrides), `--small`, `--reps=N`, and `--target=T --emit=STAGE`
// (print each kernel's STAGE — tile, gpu, llvm or asm — as compiled for
// target T, default sm_90a, without a device). Unknown options print the
// usage and exit with status 2.
inline Setup parse_args(int argc, char** argv, std::string_view what) {
  std::string device, target = "sm_90a", emit;
  Setup s;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a.starts_with("--device=")) {
      device = std::string(a.substr(9));
    } else if (a == "--small") {
      s.small = true;
    } else if (a.starts_with("--reps=")) {
      s.reps = std::atoi(std::string(a.substr(7)).c_str());
      if (s.reps < 1) {
        std::fprintf(stderr, "%s: --reps: expected a positive count, found '%.*s'\n", argv[0],
                     int(a.size() - 7), a.data() + 7);
        std::exit(2);
      }
    } else if (a.starts_with("--target=")) {
      target = std::string(a.substr(9));
    } else if (a.starts_with("--emit=")) {
      emit = std::string(a.substr(7));
    } else {
      std::fprintf(stderr,
                   "%s: %.*s\nusage: %s [--device=NAME] [--small] [--reps=N] [--target=T --emit=STAGE]\n"
                   "  --device=NAME  interp, or a GPU back end; default: the best available\n"
                   "  --small        the small sizes CI checks on the interpreter\n"
                   "  --reps=N       launches timed on a GPU after a warm-up (default 20)\n"
                   "  --target=T     interp|sm_80|sm_86|sm_89|sm_90|sm_90a|gfx90a|gfx942|gfx1100 (default sm_90a)\n"
                   "  --emit=STAGE   tile|gpu|llvm|asm: print the kernels at that stage for T, run nothing\n",
                   argv[0], int(what.size()), what.data(), argv[0]);
      if (a != "--help" && a != "-h") std::fprintf(stderr, "unknown option '%.*s'\n", int(a.size()), a.data());
      std::exit(2);
    }
  }
  if (!emit.empty()) {
    s.dev = tl::Device::inspector(target, emit);
    s.small = s.on_interp = inspecting = true;
    return s;
  }
  s.dev = tl::Device::get(device);
  s.on_interp = s.dev.name() == "interp";
  return s;
}

// An option an example adds to parse_args's: removes every `--NAME=VALUE`
// (a bare `--NAME` counts as VALUE "1") from argv and returns the last
// value, or `fallback` when there is none. Call it before parse_args, which
// rejects options it does not know. `name` is given with its dashes.
inline std::string take_option(int& argc, char** argv, std::string_view name, std::string fallback = "") {
  std::string_view value;  // the last one found; empty: none
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a == name) {
      value = "1";
    } else if (a.starts_with(name) && a.size() > name.size() && a[name.size()] == '=') {
      value = a.substr(name.size() + 1);
    } else {
      argv[kept++] = argv[i];
    }
  }
  argc = kept;
  return value.empty() ? fallback : std::string(value);
}

// Runs an example's body; a tl::Error (or any exception) is reported as a
// FAIL with its message instead of an abort, so ctest shows why.
template <class Body>
int run_main(Body&& body) {
  try {
    return body();
  } catch (const std::exception& e) {
    std::printf("error: %s\nFAIL\n", e.what());
    return 1;
  }
}

// ---------------------------------------------------------------------------
// Sizes and template dispatch.

constexpr int next_pow2(int n) {
  int p = 1;
  while (p < n) p *= 2;
  return p;
}

// Calls `f.template operator()<P>()` for the power of two P == n, P in
// [Lo, Hi]: how a run-time size picks a tile-size template instantiation.
template <int Lo, int Hi, class F>
decltype(auto) with_pow2(int n, F&& f) {
  static_assert(Lo >= 1 && Lo <= Hi && (Hi & (Hi - 1)) == 0);
  if constexpr (Lo == Hi) {
    if (n != Lo)
      throw tl::Error("block size " + std::to_string(n) +
                      " has no instantiation (powers of two up to " + std::to_string(Hi) + ")");
    return f.template operator()<Lo>();
  } else {
    if (n == Lo) return f.template operator()<Lo>();
    return with_pow2<Lo * 2, Hi>(n, std::forward<F>(f));
  }
}

// ---------------------------------------------------------------------------
// Inputs.

// n values uniform in [lo, hi), rounded to T; the same seed gives the same
// values on every machine (the generator and distribution are fixed here).
template <class T>
std::vector<T> random_vector(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 gen(seed);
  std::vector<T> v(n);
  for (auto& x : v) {
    // Not std::uniform_real_distribution: its output differs across
    // standard libraries, and the inputs should not.
    float u = float(gen() >> 8) * (1.0f / 16777216.0f);  // [0, 1)
    x = T(lo + (hi - lo) * u);
  }
  return v;
}

// The rows a reference checks: all `count` when count <= max_rows, else
// max_rows rows spread evenly over [0, count), first and last included (a
// full double-precision reference of a GPU-sized problem would take minutes).
inline std::vector<int> rows_to_check(int count, int max_rows) {
  std::vector<int> rows;
  if (count <= max_rows) {
    for (int r = 0; r < count; ++r) rows.push_back(r);
  } else {
    for (int i = 0; i < max_rows; ++i) rows.push_back(int(int64_t(i) * (count - 1) / (max_rows - 1)));
  }
  return rows;
}

// Element values as double, for the references.
template <class T>
std::vector<double> to_double(const std::vector<T>& v) {
  std::vector<double> d(v.size());
  for (size_t i = 0; i < v.size(); ++i) d[i] = double(float(v[i]));
  return d;
}

// ---------------------------------------------------------------------------
// Timing.

// Milliseconds per launch of `launch` (which enqueues one kernel launch).
// On a GPU: a warm-up launch, then the mean of `reps` launches timed with
// device events (`s.reps` of them, --reps). On the interpreter a launch is
// slow and the same every time: one launch timed with the host clock.
inline double time_ms(Setup& s, const std::function<void()>& launch) {
  if (inspecting) {
    launch();  // prints the kernel
    return 0;
  }
  if (!s.on_interp) return s.dev.time_ms(launch, s.reps);  // the mean
  auto t0 = std::chrono::steady_clock::now();
  launch();
  s.dev.synchronize();
  auto t1 = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::milli>(t1 - t0).count();
}

// Milliseconds spent in `fn` (used for the trace + compile step).
template <class F>
double wall_ms(F&& fn) {
  auto t0 = std::chrono::steady_clock::now();
  fn();
  auto t1 = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::milli>(t1 - t0).count();
}

// ---------------------------------------------------------------------------
// Checking and reporting.

struct Check {
  double max_abs_error = 0;   // max |got - ref|
  size_t mismatches = 0;      // elements outside atol + rtol * |ref|
  size_t first_bad = 0;       // index of the first mismatch
  double first_got = 0, first_ref = 0;
  size_t count = 0;
};

// Compares `got` with the double reference element by element: an element
// passes when |got - ref| <= atol + rtol * |ref| (NaN never passes).
template <class T>
Check compare(const std::vector<T>& got, const std::vector<double>& ref, double atol, double rtol) {
  Check c;
  c.count = ref.size();
  if (got.size() != ref.size()) {
    c.mismatches = std::max(got.size(), ref.size());
    c.max_abs_error = INFINITY;
    return c;
  }
  for (size_t i = 0; i < ref.size(); ++i) {
    double g = double(float(got[i]));
    double err = std::fabs(g - ref[i]);
    if (!(err <= atol + rtol * std::fabs(ref[i]))) {
      if (c.mismatches++ == 0) {
        c.first_bad = i;
        c.first_got = g;
        c.first_ref = ref[i];
      }
    }
    if (std::isnan(err) || err > c.max_abs_error) c.max_abs_error = std::isnan(err) ? INFINITY : err;
  }
  return c;
}

// Merges the checks of several outputs (e.g. layernorm's y, mean and rstd).
inline Check merge(const Check& a, const Check& b) {
  Check c = a.mismatches ? a : b;
  c.max_abs_error = std::max(a.max_abs_error, b.max_abs_error);
  c.mismatches = a.mismatches + b.mismatches;
  c.count = a.count + b.count;
  return c;
}

struct Perf {
  double ms = 0;
  double bytes = 0;  // memory traffic of one launch: reported as GB/s
  double flops = 0;  // arithmetic of one launch: reported as TFLOP/s
};

// Prints the max error, the time and throughput, then PASS or FAIL.
// Returns the process exit code: 0 on PASS, 1 on FAIL.
inline int report(const Check& c, const Perf& p) {
  if (inspecting) return 0;  // --emit: nothing ran, the results are meaningless
  std::printf("max abs error %.3g over %zu elements\n", c.max_abs_error, c.count);
  std::printf("time %.3f ms", p.ms);
  if (p.bytes > 0) std::printf(", %.3f GB/s", p.bytes / (p.ms * 1e-3) / 1e9);
  if (p.flops > 0) std::printf(", %.4f TFLOP/s", p.flops / (p.ms * 1e-3) / 1e12);
  std::printf("\n");
  if (c.mismatches) {
    std::printf("%zu mismatches; first at index %zu: got %.6g, expected %.6g\nFAIL\n", c.mismatches,
                c.first_bad, c.first_got, c.first_ref);
    return 1;
  }
  std::printf("PASS\n");
  return 0;
}

}  // namespace examples
