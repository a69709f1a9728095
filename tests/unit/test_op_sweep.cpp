// The op sweep (issue 11): every op of include/tiledsl/detail/ops.def with
// every element type of dtype.h — each axis of rank 1, 2 and 3 tiles for
// reductions and scans, each comparison predicate, dot precision and
// accumulator, load/store hint and atomic order and scope — traced through
// the public API and compiled for sm_80, sm_90a, gfx90a, gfx942 and gfx1100
// without a GPU, the PTX assembled by ptxas when the CUDA toolkit is
// installed. Each combination either compiles or fails as the expectation
// table (kExpected) says: rejected by the C++ types of the API, or a
// tl::Error at trace time or in code generation whose message holds a given
// fragment and names the kernel's source line. Nothing may crash, an
// unexpected error fails the sweep, and so does an expected error that no
// longer happens.
//
// Kernels are C++ functions, so one kernel function (sweep_kernel) reads the
// combinations to trace from a thread_local list and dispatches each one's
// element types to the typed API. Every combination is first traced alone
// (a fraction of a millisecond: that checks trace-time errors, the result's
// element type and that the op is in the kernel); those expected to compile
// are then compiled to assembly as the inspector device does (--emit=asm),
// a few cheap ones to a kernel (see cost()); a kernel that fails is compiled
// again one combination at a time to name the culprit. ptxas assembles 16
// kernels' PTX per run. One TEST_CASE per op family and target, so ctest
// runs them in parallel and a crash takes down a single entry.
//
// Cost (2 cores): about 13,000 combinations, some 200 s of CPU, three fifths
// of it on the AMD targets, whose LLVM back end takes about twice NVPTX's
// time per kernel; `ctest -E "op sweep: .* on (sm_80|gfx90a)"` keeps the
// three most different targets. For diagnosis: TILEDSL_SWEEP_BATCH=1
// compiles every combination alone (to find the one of a kernel that
// crashes; the default cost budget per kernel is 12), TILEDSL_SWEEP_ONLY=regex
// keeps the combinations whose label matches, TILEDSL_SWEEP_TIMES=1 prints
// each compile's CPU time, TILEDSL_SWEEP_DUMP=dir writes each kernel's
// assembly there.
//
// The pieces: op_sweep.h (the vocabulary), op_sweep_kernel.cpp (the kernel
// that traces combinations), op_sweep_cases.cpp (the combinations and the
// expectation table), this file (running the sweep, the test cases).
#include <catch2/catch.hpp>

#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <functional>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "codegen/compile.h"
#include "codegen_checks.h"
#include "ir/ir.h"
#include "op_sweep.h"
#include "runtime/kernel.h"
#include "tiledsl/tiledsl.h"

using namespace tl;
using namespace op_sweep;

namespace {

// ------------------------------------------------------------------ running the sweep

struct Outcome {
  enum Kind { Ok, Inexpressible, Error } kind = Ok;
  std::string message;
  Kernel kernel;
};

// Traces `batch` into one kernel.
Outcome trace(const std::vector<const Combo*>& batch, const std::string& name = "sweep") {
  Outcome o;
  g_batch = &batch;
  try {
    o.kernel = compile(sweep_kernel, {.name = name});
  } catch (const Inexpressible&) {
    o.kind = Outcome::Inexpressible;
  } catch (const Error& e) {
    o.kind = Outcome::Error;
    o.message = e.what();
  }
  g_batch = nullptr;
  return o;
}

// Compiles to assembly as the inspector device does (--target=T --emit=asm):
// the whole pipeline but the AMD code object's link. nullopt: it compiled.
std::optional<std::string> codegen_error(const Kernel& k, const std::string& target, std::string* assembly) {
  try {
    std::string text = codegen::emit_stage(*k.impl(), codegen_checks::aligned(k), target, codegen::Stage::Asm);
    if (assembly) *assembly = std::move(text);
    return std::nullopt;
  } catch (const Error& e) {
    return std::string(e.what());
  }
}

bool has_op(const Kernel& k, OpKind kind) {
  bool found = false;
  ir::walk(k.impl()->fn->body, [&](ir::Op* op) { found |= op->kind == kind; });
  return found;
}

// The error must hold the expected fragment and name a line of the kernel's
// file (where trace_combo calls the API).
bool clear_error(const std::string& message, const std::string& fragment) {
  static const std::regex line("op_sweep_kernel\\.cpp:[0-9]+");
  return message.find(fragment) != std::string::npos && std::regex_search(message, line);
}

// What a combination costs to compile, in units of an elementwise op on a
// small tile. LLVM's time grows faster than the size of a basic block, so a
// batch gathers cheap combinations only: a costly one is compiled alone.
int cost(const Combo& c) {
  bool f8 = is_f8(c.in) || (c.has_to && is_f8(c.to));
  switch (c.op) {
    case Op::Sum: case Op::Max: case Op::Min: case Op::Argmax: case Op::Argmin: case Op::Reduce:
    case Op::Cumsum: case Op::Cumprod:
      return f8 ? 16 : 4;
    case Op::Dot: case Op::DotTrans: case Op::DotLoop: case Op::DotJoin: return 16;
    default: return f8 ? 4 : 1;
  }
}

// Consecutive combinations, a batch costing at most TILEDSL_SWEEP_BATCH (12).
std::vector<std::vector<const Combo*>> batches_of(const std::vector<const Combo*>& combos) {
  int budget = 12;
  if (const char* s = std::getenv("TILEDSL_SWEEP_BATCH")) budget = std::max(1, std::atoi(s));
  std::vector<std::vector<const Combo*>> out;
  int used = budget;
  for (const Combo* c : combos) {
    if (used + cost(*c) > budget) {
      out.emplace_back();
      used = 0;
    }
    out.back().push_back(c);
    used += cost(*c);
  }
  return out;
}

// Compiled batches whose PTX one ptxas run assembles (a run costs ~40 ms
// however small its input).
constexpr size_t kModulesPerPtxas = 16;

// PTX modules as one: the first one's header (.version, .target,
// .address_size), and each module's own globals (printf formats) renamed
// apart. Entries have names of their own already; a repeated .extern
// declaration is fine with ptxas.
std::string merge_ptx(const std::vector<std::string>& modules) {
  static const std::regex global_decl("^\\.global[^\\n]*?([A-Za-z_$][\\w$]*)\\s*\\[");
  auto ident = [](char ch, bool first) {
    return std::isalpha(uint8_t(ch)) || ch == '_' || ch == '$' || (!first && std::isdigit(uint8_t(ch)));
  };
  std::string out;
  for (size_t i = 0; i < modules.size(); ++i) {
    const std::string& m = modules[i];
    std::set<std::string> globals;
    std::istringstream lines(m);
    for (std::string line; std::getline(lines, line);) {
      std::smatch g;
      if (line.rfind(".global", 0) == 0 && std::regex_search(line, g, global_decl)) globals.insert(g[1]);
    }
    // One pass over the identifiers: the globals get the module's suffix.
    std::string renamed;
    for (size_t k = 0; k < m.size();) {
      if (!ident(m[k], true)) {
        renamed += m[k++];
        continue;
      }
      size_t e = k;
      while (e < m.size() && ident(m[e], false)) ++e;
      std::string id = m.substr(k, e - k);
      renamed += globals.count(id) ? id + "_m" + std::to_string(i) : id;
      k = e;
    }
    std::istringstream body(renamed);
    for (std::string line; std::getline(body, line);) {
      bool header = line.rfind(".version", 0) == 0 || line.rfind(".target", 0) == 0 ||
                    line.rfind(".address_size", 0) == 0;
      if (i == 0 || !header) out += line + "\n";
    }
  }
  return out;
}

void sweep(Family family, const std::string& target) {
  auto t0 = std::chrono::steady_clock::now();
  std::clock_t cpu0 = std::clock();
  const bool print_times = std::getenv("TILEDSL_SWEEP_TIMES") != nullptr;
  std::vector<Combo> combos = combos_of(family, target);
  // TILEDSL_SWEEP_ONLY=regex: only the combinations whose label matches (for diagnosis).
  const char* only = std::getenv("TILEDSL_SWEEP_ONLY");
  if (only) std::erase_if(combos, [&](const Combo& c) { return !std::regex_search(c.label(), std::regex(only)); });
  std::vector<int> matched(kExpected.size(), 0);
  std::vector<const Combo*> to_compile;
  int inexpressible = 0, trace_errors = 0, codegen_errors = 0, compiled = 0, failures = 0;

  for (const Combo& c : combos) {
    const Expected* expect = nullptr;
    for (size_t r = 0; r < kExpected.size(); ++r) {
      if (kExpected[r].family != family || !kExpected[r].on(target) || !kExpected[r].when(c)) continue;
      if (expect) {
        FAIL_CHECK(c.label() << ": two rows of the expectation table match: \"" << expect->why << "\" and \""
                             << kExpected[r].why << "\"");
        ++failures;
      }
      expect = &kExpected[r];
      ++matched[r];
    }
    Outcome o = trace({&c});
    if (o.kind == Outcome::Inexpressible || o.kind == Outcome::Error) {
      Stage got = o.kind == Outcome::Inexpressible ? Stage::Inexpressible : Stage::Trace;
      if (!expect) {
        FAIL_CHECK(c.label() << ": unexpected failure, " << stage_str(got) << (o.message.empty() ? "" : ": ")
                             << o.message);
        ++failures;
      } else if (expect->stage != got || (got == Stage::Trace && !clear_error(o.message, expect->message))) {
        FAIL_CHECK(c.label() << ": expected " << stage_str(expect->stage) << " with \"" << expect->message
                             << "\" (" << expect->why << "), found " << stage_str(got) << ": " << o.message);
        ++failures;
      }
      (got == Stage::Inexpressible ? inexpressible : trace_errors)++;
      continue;
    }
    if (expect && expect->stage != Stage::Codegen) {
      FAIL_CHECK(c.label() << ": traced, but " << stage_str(expect->stage) << " was expected (" << expect->why
                           << ")");
      ++failures;
      continue;
    }
    if (!has_op(o.kernel, c.kind)) {
      FAIL_CHECK(c.label() << ": the traced kernel has no '" << ir::op_name(c.kind) << "' op:\n" << o.kernel.ir());
      ++failures;
      continue;
    }
    if (expect) {  // Stage::Codegen
      INFO("compiling " << c.label() << " for " << target);
      auto err = codegen_error(o.kernel, target, nullptr);
      if (!err) {
        FAIL_CHECK(c.label() << ": compiled for " << target << ", but an error with \"" << expect->message
                             << "\" was expected (" << expect->why << ")");
        ++failures;
      } else if (!clear_error(*err, expect->message)) {
        FAIL_CHECK(c.label() << ": expected an error naming its line with \"" << expect->message << "\" ("
                             << expect->why << "), found: " << *err);
        ++failures;
      }
      ++codegen_errors;
      continue;
    }
    to_compile.push_back(&c);
  }

  // The rest must compile: in batches, one at a time where a batch fails.
  int batches = 0, assembled = 0;
  bool have_ptxas = true;
  // PTX waiting for ptxas (module, labels): several modules go through one
  // run; when it fails, each alone, to name the combinations.
  std::vector<std::pair<std::string, std::string>> unassembled;
  auto assemble = [&] {
    if (unassembled.empty() || !have_ptxas) return;
    std::vector<std::string> modules;
    for (auto& [m, l] : unassembled) modules.push_back(m);
    auto run = codegen_checks::run_ptxas(merge_ptx(modules), target);
    if (!run) {
      have_ptxas = false;
    } else {
      ++assembled;
      if (!run->ok)
        for (auto& [m, l] : unassembled)
          if (auto one = codegen_checks::run_ptxas(m, target); one && !one->ok) {
            FAIL_CHECK("ptxas rejects the PTX for " << target << " of:" << l << "\n" << one->log);
            ++failures;
          }
    }
    unassembled.clear();
  };
  for (const std::vector<const Combo*>& batch : batches_of(to_compile)) {
    std::string labels;
    for (const Combo* c : batch) labels += "\n  " + c->label();
    INFO("compiling for " << target << ":" << labels);
    ++batches;
    std::clock_t batch0 = std::clock();
    Outcome o = trace(batch, "sweep_" + std::to_string(batches));  // a name of its own in merged PTX
    std::string ptx;
    std::optional<std::string> err = o.kind == Outcome::Ok ? codegen_error(o.kernel, target, &ptx)
                                                           : std::optional<std::string>(o.message);
    if (print_times)
      std::printf("  %7.1f ms CPU compiling for %s:%s\n", 1e3 * double(std::clock() - batch0) / CLOCKS_PER_SEC,
                  target.c_str(), labels.c_str());
    std::vector<std::pair<const Combo*, std::string>> culprits;
    if (err) {
      for (const Combo* c : batch) {
        INFO("compiling " << c->label() << " alone for " << target);
        Outcome one = trace({c});
        auto e1 = one.kind == Outcome::Ok ? codegen_error(one.kernel, target, nullptr) : one.message;
        if (e1) culprits.push_back({c, *e1});
      }
      for (auto& [c, e] : culprits) {
        FAIL_CHECK(c->label() << ": unexpected error compiling for " << target << ": " << e);
        ++failures;
      }
      if (culprits.empty()) {
        FAIL_CHECK("a batch fails on " << target << " though each combination compiles alone: " << *err);
        ++failures;
      }
      compiled += int(batch.size() - culprits.size());
      continue;
    }
    compiled += int(batch.size());
    if (const char* dir = std::getenv("TILEDSL_SWEEP_DUMP"))
      std::ofstream(std::string(dir) + "/" + target + "." + std::to_string(batches) + ".s")
          << std::regex_replace(labels, std::regex("\n"), "\n//") << "\n" << ptx;
    if (is_nvidia(target)) {
      unassembled.push_back({std::move(ptx), labels});
      if (unassembled.size() == kModulesPerPtxas) assemble();
    }
  }
  if (is_nvidia(target)) {
    assemble();
    if (!have_ptxas) WARN("[SKIP] ptxas not found (/usr/local/cuda/bin/ptxas): PTX not assembled");
  }

  // Every row of the table for this family and target must still match a combination.
  for (size_t r = 0; r < kExpected.size(); ++r)
    if (kExpected[r].family == family && kExpected[r].on(target) && matched[r] == 0 && !only) {
      FAIL_CHECK("the expectation \"" << kExpected[r].why << "\" matches no combination of " << family_str(family)
                                        << " on " << target);
      ++failures;
    }
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  double cpu = double(std::clock() - cpu0) / CLOCKS_PER_SEC;
  std::printf("op sweep: %-28s %-8s %4zu combinations: %4d compiled (%d batches, %d through ptxas), %d expected "
              "errors (%d C++ types, %d trace, %d codegen), %d failures, %.2f s (%.2f s CPU)\n",
              family_str(family), target.c_str(), combos.size(), compiled, batches, assembled,
              inexpressible + trace_errors + codegen_errors, inexpressible, trace_errors, codegen_errors, failures,
              s, cpu);
  CHECK(failures == 0);
}

}  // namespace

// One test case per family and target.
#define SWEEP_CASES(FAMILY, NAME)                                                                  \
  TEST_CASE("op sweep: " NAME " on sm_80", "[sweep]") { sweep(Family::FAMILY, "sm_80"); }         \
  TEST_CASE("op sweep: " NAME " on sm_90a", "[sweep]") { sweep(Family::FAMILY, "sm_90a"); }       \
  TEST_CASE("op sweep: " NAME " on gfx90a", "[sweep]") { sweep(Family::FAMILY, "gfx90a"); }       \
  TEST_CASE("op sweep: " NAME " on gfx942", "[sweep]") { sweep(Family::FAMILY, "gfx942"); }       \
  TEST_CASE("op sweep: " NAME " on gfx1100", "[sweep]") { sweep(Family::FAMILY, "gfx1100"); }

SWEEP_CASES(Shape, "creation and shape")
SWEEP_CASES(Binary, "elementwise binary")
SWEEP_CASES(Unary, "elementwise unary")
SWEEP_CASES(Cast, "casts and pointers")
SWEEP_CASES(Reduce, "sum max min")
SWEEP_CASES(ArgReduce, "argmax argmin")
SWEEP_CASES(GenericReduce, "generic reduce")
SWEEP_CASES(Scan, "cumsum cumprod")
SWEEP_CASES(Dot, "dot")
SWEEP_CASES(Memory, "load store")
SWEEP_CASES(Atomic, "atomics")
SWEEP_CASES(Control, "control flow and debugging")
