// Differential testing on random kernels (random_kernel.h, issue 11 §2).
//
// [random]: CI, no GPU. Seeds 0..199 in four cases; each kernel is traced,
// run on the interpreter (no error; every stored value inside the interval
// the generator claims for it) and compiled by codegen::compile for a
// rotating pair of the five targets, PTX assembled by ptxas where present.
// Every kernel runs in a child process, so a compiler crash is reported
// with its seed and shrunk to a minimal kernel instead of ending the run.
//
// [gpu]: the same kernels on the GPU and on the interpreter, on fresh
// random inputs, compared with the error model (exact for integers and
// for correctly rounded float ops, documented ulps otherwise). Env:
// TILEDSL_RANDOM_KERNELS=N (default 100), TILEDSL_RANDOM_SEED=S (first
// seed, default 1000), TILEDSL_RANDOM_BUDGET=B (ops, default 24),
// TILEDSL_RANDOM_REDUCE_ANY_ORDER=0 (see GenOptions::reduce_any_order),
// TILEDSL_RANDOM_VERBOSE=1 (each seed's number before it runs).
//
// [.random-replay]: TILEDSL_RANDOM_SEED=S [TILEDSL_RANDOM_BUDGET=B]: prints
// the kernel, reruns the CI checks (and the GPU comparison where there is
// a GPU) and shrinks a failure. Any failure prints such a replay line.
// TILEDSL_RANDOM_ALL=1 stops the generator from avoiding the known issues
// listed in random_kernel_gen_*.cpp.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include <unistd.h>

#include "codegen/compile.h"
#include "gpu_oracle.h"
#include "random_kernel.h"
#include "random_kernel_internal.h"
#include "runtime/kernel.h"

using namespace tl;

namespace {

int env_int(const char* name, int dflt) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : dflt;
}
randk::GenOptions gen_options(bool ci = false) {
  randk::GenOptions o;
  o.avoid_known_issues = env_int("TILEDSL_RANDOM_ALL", 0) == 0;
  o.reduce_any_order = env_int("TILEDSL_RANDOM_REDUCE_ANY_ORDER", 1) != 0;
  if (ci) {  // compile time grows with registers a thread: small tiles in CI
    o.max_numel = 512;
    o.max_dot_dim = 32;
  }
  return o;
}
constexpr int kBudget = 24, kCiBudget = 16;
const char* const kTargets[] = {"sm_80", "sm_90a", "gfx90a", "gfx942", "gfx1100"};

// What a tl::Error from codegen may say for a combination the back ends do
// not support (each a documented limit); anything else is a failure.
// None today: every combination the generator makes must compile.
const std::vector<const char*> kExpectedErrors = {};

codegen::Specialization spec_of(const Kernel& k, const randk::Program& p) {
  codegen::Specialization s;
  int ints = 0;
  const int32_t vals[] = {p.n, p.m, p.trips};
  for (const auto& t : k.params())
    s.args.push_back(t.is_ptr ? codegen::pointer_arg_facts(256) : codegen::int_arg_facts(vals[ints++]));
  return s;
}

std::string replay_line(const randk::Program& p) {
  std::ostringstream o;
  o << "replay: " << (p.opts.max_numel == gen_options(true).max_numel ? "TILEDSL_RANDOM_CI=1 " : "")
    << (p.opts.reduce_any_order ? "" : "TILEDSL_RANDOM_REDUCE_ANY_ORDER=0 ") << "TILEDSL_RANDOM_SEED=" << p.seed
    << " TILEDSL_RANDOM_BUDGET=" << p.budget
    << " build/tests/tiledsl_tests \"[.random-replay]\"";
  return o.str();
}

// Interpreter sanity: every element a store wrote lies in the value's
// interval (elements still holding the fill pattern were not written).
std::string check_intervals(const randk::Program& p, const std::vector<std::vector<uint8_t>>& out) {
  std::ostringstream o;
  std::function<void(const std::vector<randk::Instr>&)> walk = [&](const std::vector<randk::Instr>& code) {
    for (const auto& in : code) {
      walk(in.body);
      walk(in.else_body);
      if (in.kind != randk::Kind::Store) continue;
      const randk::Val& v = p.vals[size_t(in.args[0])];
      if (v.wild) continue;
      size_t sz = size_t(byte_size(v.dt));
      const auto& buf = out[size_t(randk::idx(v.dt))];
      for (int64_t i = 0; i < v.numel() * p.grid; ++i) {
        const uint8_t* e = buf.data() + size_t(in.slot + i) * sz;
        bool fill = true;
        for (size_t b = 0; b < sz; ++b) fill = fill && e[b] == 0x7b;
        if (fill) continue;
        double x;
        switch (v.dt) {
          case DType::i1: x = e[0]; break;
          case DType::i8: x = int8_t(e[0]); break;
          case DType::u8: x = e[0]; break;
          case DType::u16: { uint16_t t; std::memcpy(&t, e, 2); x = t; break; }
          case DType::i16: { int16_t t; std::memcpy(&t, e, 2); x = t; break; }
          case DType::i32: { int32_t t; std::memcpy(&t, e, 4); x = t; break; }
          case DType::u32: { uint32_t t; std::memcpy(&t, e, 4); x = t; break; }
          case DType::i64: { int64_t t; std::memcpy(&t, e, 8); x = double(t); break; }
          case DType::u64: { uint64_t t; std::memcpy(&t, e, 8); x = double(t); break; }
          case DType::f8e4m3: x = float(f8e4m3::from_bits(e[0])); break;
          case DType::f8e5m2: x = float(f8e5m2::from_bits(e[0])); break;
          case DType::f16: { uint16_t t; std::memcpy(&t, e, 2); x = float(f16::from_bits(t)); break; }
          case DType::bf16: { uint16_t t; std::memcpy(&t, e, 2); x = float(bf16::from_bits(t)); break; }
          case DType::f32: { float t; std::memcpy(&t, e, 4); x = t; break; }
          default: std::memcpy(&x, e, 8); break;
        }
        if (!(x >= v.lo && x <= v.hi)) {
          o << "store #" << in.id << " element " << i << " = " << x << ", outside the generator's interval [" << v.lo
            << ", " << v.hi << "] of v" << in.args[0] << "\n";
          return;
        }
      }
    }
  };
  walk(p.code);
  return o.str();
}

// ptxas's complaint about `ptx` ("" when it assembles or is not installed).
std::string ptxas_errors(const std::string& ptx, const std::string& arch) {
  const char* tool = "/usr/local/cuda/bin/ptxas";
  if (!std::filesystem::exists(tool)) return "";
  auto dir = std::filesystem::temp_directory_path() / ("tiledsl-rk-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "k.ptx") << ptx;
  std::string cmd = std::string(tool) + " -arch=" + arch + " " + (dir / "k.ptx").string() + " -o " +
                    (dir / "k.cubin").string() + " > " + (dir / "log").string() + " 2>&1";
  int rc = std::system(cmd.c_str());
  std::ifstream log(dir / "log");
  std::string out((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  std::filesystem::remove_all(dir);
  return rc == 0 ? "" : arch + ": ptxas rejected the PTX: " + out + "\n";
}

// The CI checks of one program, meant to run in a child process. Returns
// "" or one line per problem; lines starting with "expected:" are the
// documented errors of kExpectedErrors.
std::string ci_checks(const randk::Program& p, const std::vector<std::string>& targets, bool ptxas) {
  std::ostringstream o;
  // TILEDSL_RANDOM_TIMES=1: the seconds of each stage, on lines that start
  // with a space (not failures).
  bool times = env_int("TILEDSL_RANDOM_TIMES", 0) != 0;
  auto t0 = std::chrono::steady_clock::now();
  auto lap = [&](const std::string& what) {
    auto t1 = std::chrono::steady_clock::now();
    if (times) o << " " << what << " " << std::chrono::duration<double>(t1 - t0).count() << " s\n";
    if (times) std::cerr << "done: " << what << "\n";  // survives a crash of the next stage
    t0 = t1;
  };
  Kernel k;
  try {
    k = randk::compile_program(p);
  } catch (const Error& e) {
    return std::string("trace: tl::Error: ") + e.what() + "\n";
  }
  lap("trace");
  try {
    Device interp = Device::get("interp");
    auto out = randk::run(interp, k, p, randk::make_buffers(p, p.seed));
    o << check_intervals(p, out);
  } catch (const Error& e) {
    o << "interp: tl::Error: " << e.what() << "\n";
  }
  lap("interp");
  for (const auto& t : targets) {
    try {
      auto ck = codegen::compile(*k.impl(), spec_of(k, p), t);
      lap(t);
      if (ptxas && t.rfind("sm_", 0) == 0) o << ptxas_errors(ck.assembly, t);
      if (ptxas && t.rfind("sm_", 0) == 0) lap("ptxas");
    } catch (const Error& e) {
      bool expected = false;
      for (const char* s : kExpectedErrors) expected = expected || std::strstr(e.what(), s);
      o << (expected ? "expected: " : "") << t << ": tl::Error: " << e.what() << "\n";
    }
  }
  return o.str();
}

bool real_failure(const std::string& report) {
  std::istringstream in(report);
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line.rfind("expected: ", 0) != 0 && line[0] != ' ') return true;
  return false;
}

// Shrinks a failing CI program (in children) and returns the report.
std::string shrink_report(const randk::Program& p, const std::vector<std::string>& targets,
                          const std::string& first_line) {
  auto fails = [&](const randk::Program& q) {
    std::string r = randk::in_child([&] { return ci_checks(q, targets, false); });
    // The same kind of failure: the first word of the first report line.
    return real_failure(r) && r.substr(0, r.find(' ')) == first_line.substr(0, first_line.find(' '));
  };
  randk::Shrunk s = randk::shrink(p.seed, p.budget, p.opts, fails);
  std::ostringstream o;
  o << "shrunk to budget " << s.budget << " (" << s.attempts << " attempts), " << s.replaced.size()
    << " ops replaced by constants:\n"
    << s.program.str();
  o << "its report: " << randk::in_child([&] { return ci_checks(s.program, targets, false); });
  return o.str();
}

struct Tally {
  int kernels = 0, compiles = 0, expected = 0;
  std::map<std::string, int> notes;
};

void ci_seeds(uint64_t first, int count, Tally& tally) {
  auto opts = gen_options(true);
  for (uint64_t seed = first; seed < first + uint64_t(count); ++seed) {
    randk::Program p = randk::generate(seed, kCiBudget, opts);
    for (const auto& n : p.notes) tally.notes[n.substr(0, n.find(" (x"))]++;
    // One target a kernel, in turn; ptxas for every other NVIDIA one.
    std::vector<std::string> targets = {kTargets[seed % 5]};
    bool ptxas = seed % 10 < 2;
    std::string r = randk::in_child([&] { return ci_checks(p, targets, ptxas); });
    tally.kernels++;
    tally.compiles += int(targets.size());
    if (!real_failure(r)) {
      std::istringstream in(r);
      for (std::string line; std::getline(in, line);) tally.expected += line.rfind("expected: ", 0) == 0;
      continue;
    }
    std::string first_line = r.substr(0, r.find('\n'));
    INFO(replay_line(p) << "\n" << r << "\nkernel:\n" << p.str() << shrink_report(p, targets, first_line));
    CHECK(r.empty());
  }
}

void ci_case(uint64_t first, int count) {
  auto t0 = std::chrono::steady_clock::now();
  Tally t;
  ci_seeds(first, count, t);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::ostringstream o;
  o << "random kernels " << first << ".." << first + uint64_t(count) - 1 << ": " << t.kernels << " kernels, "
    << t.compiles << " target compiles, " << t.expected << " expected errors, " << s << " s";
  for (const auto& [why, n] : t.notes) o << "\n  avoided in " << n << " kernels: " << why;
  WARN(o.str());
}

}  // namespace

TEST_CASE("random kernels: the generator is deterministic and budgets are prefixes", "[random]") {
  for (uint64_t seed : {1u, 2u, 77u}) {
    randk::Program a = randk::generate(seed, 20), b = randk::generate(seed, 20);
    CHECK(a.str() == b.str());
    // Budget 8's ops (but what closes its loops and its stores) appear in
    // budget 20's listing, in the same order.
    auto ops_of = [](const std::string& text) {
      std::vector<std::string> v;
      std::istringstream in(text);
      for (std::string line; std::getline(in, line);)
        if (line.find('#') != std::string::npos && line.find("#1000") == std::string::npos &&
            line.find("store(") == std::string::npos)
          v.push_back(line);
      return v;
    };
    auto small = ops_of(randk::generate(seed, 8).str()), large = ops_of(a.str());
    CHECK(small.size() >= 4);
    size_t j = 0;
    for (const auto& line : small) {
      while (j < large.size() && large[j] != line) ++j;
      CHECK(j < large.size());
    }
  }
}

TEST_CASE("random kernels: integer-only kernels are compared exactly", "[random]") {
  int with_floats = 0, checked = 0;
  for (uint64_t seed = 0; seed < 40; ++seed) {
    randk::Program p = randk::generate(seed, 16);
    auto bounds = randk::error_bounds(p);
    std::vector<const randk::Instr*> stores;
    std::function<void(const std::vector<randk::Instr>&)> walk = [&](const std::vector<randk::Instr>& code) {
      for (const auto& in : code) {
        if (in.kind == randk::Kind::Store) stores.push_back(&in);
        walk(in.body);
        walk(in.else_body);
      }
    };
    walk(p.code);
    REQUIRE(stores.size() == bounds.size());
    for (size_t i = 0; i < stores.size(); ++i) {
      const randk::Val& v = p.vals[size_t(stores[i]->args[0])];
      if (!is_float(v.dt)) CHECK(bounds[i] == 0);
      else with_floats++;
      if (is_float(v.dt) && v.exact) CHECK(bounds[i] == 0);
      // Well conditioned: within 16 ulps of the largest magnitude, or 5% of the range.
      double m = std::max(std::fabs(v.lo), std::fabs(v.hi));
      double ulp = std::ldexp(1.0, std::max(std::ilogb(std::max(m, 1e-30)), -126) -
                                       (v.dt == DType::f32 ? 23 : v.dt == DType::f64 ? 52 : v.dt == DType::f16 ? 10
                                        : v.dt == DType::bf16 ? 7 : v.dt == DType::f8e4m3 ? 3 : 2));
      if (is_float(v.dt) && !v.wild) {
        INFO("seed " << seed << " store #" << stores[i]->id << ":\n" << p.str());
        CHECK(bounds[i] <= std::max(16 * ulp, 0.05 * (v.hi - v.lo)));
      }
      checked++;
    }
  }
  CHECK(checked > 100);
  CHECK(with_floats > 20);
}

TEST_CASE("random kernels: shrinking finds a minimal failing kernel", "[random]") {
  // A synthetic failure: "the kernel has a dot". The shrunk program must
  // still have one, at the smallest budget where the generator makes one.
  auto has_dot = [](const randk::Program& p) {
    std::function<bool(const std::vector<randk::Instr>&)> any = [&](const std::vector<randk::Instr>& code) {
      for (const auto& in : code)
        if (in.kind == randk::Kind::Dot || any(in.body) || any(in.else_body)) return true;
      return false;
    };
    return any(p.code);
  };
  uint64_t seed = 0;
  while (!has_dot(randk::generate(seed, 24))) ++seed;
  randk::Shrunk s = randk::shrink(seed, 24, {}, has_dot);
  CHECK(has_dot(s.program));
  CHECK_FALSE(has_dot(randk::generate(seed, s.budget - 1)));
  // Everything but the dot (and a loop or if holding it) became a constant or a store.
  INFO(s.program.str());
  int others = 0;
  for (const auto& in : s.program.code)
    others += in.kind != randk::Kind::Dot && in.kind != randk::Kind::Const && in.kind != randk::Kind::Store &&
              !((in.kind == randk::Kind::For || in.kind == randk::Kind::If) && has_dot(randk::Program{.code = {in}}));
  CHECK(others == 0);
  // The shrunk program still traces and runs.
  Kernel k = randk::compile_program(s.program);
  Device interp = Device::get("interp");
  CHECK_NOTHROW(randk::run(interp, k, s.program, randk::make_buffers(s.program, 1)));
}

TEST_CASE("random kernels: the comparison sees a one-ulp change", "[random]") {
  // Two interpreter runs agree; flipping the lowest bit of one stored
  // element of an exactly compared store is reported.
  int flipped = 0;
  for (uint64_t seed = 0; seed < 10 && flipped < 3; ++seed) {
    randk::Program p = randk::generate(seed, 12, gen_options(true));
    Kernel k = randk::compile_program(p);
    Device interp = Device::get("interp");
    auto b = randk::make_buffers(p, 5);
    auto want = randk::run(interp, k, p, b), got = randk::run(interp, k, p, b);
    CHECK(randk::compare(p, want, got).empty());
    auto bounds = randk::error_bounds(p);
    std::vector<const randk::Instr*> stores;
    std::function<void(const std::vector<randk::Instr>&)> walk = [&](const std::vector<randk::Instr>& code) {
      for (const auto& in : code) {
        if (in.kind == randk::Kind::Store) stores.push_back(&in);
        walk(in.body);
        walk(in.else_body);
      }
    };
    walk(p.code);
    for (size_t i = 0; i < stores.size(); ++i) {
      const randk::Val& v = p.vals[size_t(stores[i]->args[0])];
      if (bounds[i] != 0 || v.dt == DType::i1 || v.wild) continue;
      got[size_t(randk::idx(v.dt))][size_t(stores[i]->slot) * size_t(byte_size(v.dt))] ^= 1;
      CHECK_THAT(randk::compare(p, want, got), Catch::Contains("1 elements differ"));
      flipped++;
      break;
    }
  }
  CHECK(flipped == 3);
}

TEST_CASE("random kernels 0-49 compile for every target", "[random]") { ci_case(0, 50); }
TEST_CASE("random kernels 50-99 compile for every target", "[random]") { ci_case(50, 50); }
TEST_CASE("random kernels 100-149 compile for every target", "[random]") { ci_case(100, 50); }
TEST_CASE("random kernels 150-199 compile for every target", "[random]") { ci_case(150, 50); }

namespace {

// One kernel on the GPU against the interpreter; "" or the mismatches.
std::string gpu_check(const randk::Program& p, uint64_t data_seed) {
  Kernel k = randk::compile_program(p);
  randk::Buffers b = randk::make_buffers(p, data_seed);
  Device interp = Device::get("interp"), gpu = Device::get("cuda");
  auto want = randk::run(interp, k, p, b);
  std::vector<std::vector<uint8_t>> got;
  try {
    got = randk::run(gpu, k, p, b);
  } catch (const Error& e) {
    return std::string("gpu: tl::Error: ") + e.what() + "\n";
  }
  return randk::compare(p, want, got);
}

}  // namespace

TEST_CASE("random kernels agree on the GPU and the interpreter", "[gpu]") {
  REQUIRE_GPU();
  int count = env_int("TILEDSL_RANDOM_KERNELS", 100);
  uint64_t first = uint64_t(env_int("TILEDSL_RANDOM_SEED", 1000));
  int budget = env_int("TILEDSL_RANDOM_BUDGET", kBudget);
  auto opts = gen_options();
  bool verbose = env_int("TILEDSL_RANDOM_VERBOSE", 0) != 0;
  auto t0 = std::chrono::steady_clock::now();
  int mismatches = 0, errors = 0;
  for (uint64_t seed = first; seed < first + uint64_t(count); ++seed) {
    randk::Program p = randk::generate(seed, budget, opts);
    if (verbose) std::cout << "seed " << seed << "\n" << std::flush;
    std::string r;
    try {
      r = gpu_check(p, seed * 7919 + 1);
    } catch (const Error& e) {
      r = std::string("tl::Error: ") + e.what() + "\n";
    } catch (const std::exception& e) {
      r = std::string("tl::Error expected, found an exception: ") + e.what() + "\n";
    }
    if (r.empty()) continue;
    (r.find("tl::Error") != std::string::npos ? errors : mismatches)++;
    auto fails = [&](const randk::Program& q) {
      try {
        std::string s = gpu_check(q, seed * 7919 + 1);
        return !s.empty() && (s.find("tl::Error") != std::string::npos) == (r.find("tl::Error") != std::string::npos);
      } catch (const std::exception& e) {
        return r.find("tl::Error") != std::string::npos;
      }
    };
    randk::Shrunk s = randk::shrink(seed, budget, opts, fails);
    std::cout << "MISMATCH " << replay_line(p) << "\n" << r << "kernel:\n" << p.str() << "shrunk to budget " << s.budget
              << ":\n" << s.program.str() << std::flush;
    INFO(replay_line(p) << "\n" << r);
    CHECK(r.empty());
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::cout << "random kernels on the GPU: seeds " << first << ".." << first + uint64_t(count) - 1 << ", budget "
            << budget << ": " << count << " kernels, " << mismatches << " mismatches, " << errors << " errors, " << secs
            << " s\n";
}

TEST_CASE("random kernel replay", "[.random-replay]") {
  uint64_t seed = uint64_t(env_int("TILEDSL_RANDOM_SEED", 0));
  bool ci = env_int("TILEDSL_RANDOM_CI", 0) != 0;
  int budget = env_int("TILEDSL_RANDOM_BUDGET", ci ? kCiBudget : kBudget);
  randk::Program p = randk::generate(seed, budget, gen_options(ci));
  std::cout << p.str();
  for (const auto& n : p.notes) std::cout << "avoided: " << n << "\n";
  std::vector<std::string> targets(std::begin(kTargets), std::end(kTargets));
  std::string r = randk::in_child([&] { return ci_checks(p, targets, true); });
  std::cout << "CI checks: " << (r.empty() ? "ok\n" : r);
  if (real_failure(r)) std::cout << shrink_report(p, targets, r.substr(0, r.find('\n')));
  if (std::getenv("TILEDSL_RANDOM_IR")) std::cout << randk::compile_program(p).ir();
  if (gpu_oracle::have_gpu()) {
    std::string g = gpu_check(p, seed * 7919 + 1);
    std::cout << "GPU vs interpreter: " << (g.empty() ? "agree\n" : g);
  }
  CHECK(!real_failure(r));
}
