// tiledsl-opt: the IR driver for tests and debugging, like mlir-opt.
//
//   tiledsl-opt <file.tir | -> [--pass=name]... [--verify-only] [--no-locs]
//               [--target=T [--num-warps=N] [--num-ctas=N] [--num-stages=N] [--warp-specialize=0|1] [--aligned[=8]] [--emit=llvm|asm]]
//
// Parses the text form (Tile IR or GPU IR), verifies it, runs the named
// passes in order (verifying after each, so a pass that breaks the IR is
// named), and prints the result to stdout. The Tile IR passes
// (canonicalize, cse, dce) need no target; the GPU passes (assign-layouts,
// convert-layouts: codegen/pipeline.h) compile for --target, with the
// kernel options given (default 4 warps, 1 CTA, 3 stages) and, with --aligned, every
// pointer argument 16-byte aligned and every integer one divisible by 16
// (as launches specialize them; --aligned=8: the integers divisible by 8,
// the class of a launch whose integers are 8 mod 16). --emit=llvm or asm
// lowers the GPU IR the passes leave (or the input's) for --target and
// prints that instead. With --verify-only it prints nothing on success.
// Errors go to stderr as the tl::Error text and the exit code is 1, so a
// FileCheck test can check a diagnostic with
//   // RUN: not tiledsl-opt %s 2>&1 | FileCheck %s
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "codegen/compile.h"
#include "codegen/pipeline.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "transforms/passes.h"

namespace {

constexpr const char* kUsage =
    "usage: tiledsl-opt <file.tir | -> [--pass=name]... [--verify-only] [--no-locs]\n"
    "                   [--target=T [--num-warps=N] [--num-ctas=N] [--num-stages=N] [--warp-specialize=0|1] [--aligned[=8]] [--emit=llvm|asm]]";

struct Options {
  std::string input;
  std::vector<std::string> passes;
  bool verify_only = false;
  bool locations = true;
  std::string target;
  int num_warps = 4, num_ctas = 1, num_stages = 3;
  int warp_specialize = -1;  // --warp-specialize=0|1; the compiler decides without it
  int aligned = 0;  // the integers' divisibility --aligned promises (0: nothing promised)
  std::string emit;  // "", "llvm" or "asm"
};

int int_option(const std::string& arg, size_t prefix) {
  try {
    size_t used = 0;
    int v = std::stoi(arg.substr(prefix), &used);
    if (used == arg.size() - prefix) return v;
  } catch (const std::exception&) {
  }
  throw tl::Error("tiledsl-opt: expected an integer in '" + arg + "'");
}

Options parse_args(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--pass=", 0) == 0) {
      o.passes.push_back(a.substr(7));
    } else if (a == "--verify-only") {
      o.verify_only = true;
    } else if (a == "--no-locs") {
      o.locations = false;
    } else if (a.rfind("--target=", 0) == 0) {
      o.target = a.substr(9);
    } else if (a.rfind("--num-warps=", 0) == 0) {
      o.num_warps = int_option(a, 12);
    } else if (a.rfind("--num-ctas=", 0) == 0) {
      o.num_ctas = int_option(a, 11);
    } else if (a.rfind("--num-stages=", 0) == 0) {
      o.num_stages = int_option(a, 13);
    } else if (a.rfind("--warp-specialize=", 0) == 0) {
      o.warp_specialize = int_option(a, 18);
      if (o.warp_specialize != 0 && o.warp_specialize != 1)
        throw tl::Error("tiledsl-opt: expected --warp-specialize=0 or 1, found '" + a + "'");
    } else if (a == "--aligned") {
      o.aligned = 16;
    } else if (a.rfind("--aligned=", 0) == 0) {
      o.aligned = int_option(a, 10);
      if (o.aligned != 16 && o.aligned != 8)
        throw tl::Error("tiledsl-opt: expected --aligned, --aligned=16 or --aligned=8, found '" + a + "'");
    } else if (a == "--emit=llvm" || a == "--emit=asm") {
      o.emit = a.substr(7);
    } else if (a == "-h" || a == "--help") {
      std::cout << kUsage << "\n";
      std::exit(0);
    } else if ((a.empty() || a[0] != '-' || a == "-") && o.input.empty()) {
      o.input = a;
    } else {
      throw tl::Error("tiledsl-opt: expected an option or one input file, found '" + a + "'\n" + kUsage);
    }
  }
  if (o.input.empty()) throw tl::Error(std::string("tiledsl-opt: expected an input file, found none\n") + kUsage);
  return o;
}

std::string read_input(const std::string& path) {
  std::stringstream buf;
  if (path == "-") {
    buf << std::cin.rdbuf();
  } else {
    std::ifstream in(path);
    if (!in) throw tl::Error("tiledsl-opt: expected a readable file, found '" + path + "'");
    buf << in.rdbuf();
  }
  return buf.str();
}

std::string known_passes() {
  std::string s;
  for (const auto& n : tl::transforms::pass_names()) s += (s.empty() ? "" : ", ") + n;
  for (const auto& p : tl::codegen::gpu_passes()) s += ", " + std::string(p.name) + " (with --target)";
  return s;
}

// What the launch is taken to promise of `fn`'s arguments.
std::vector<tl::transforms::ArgFacts> arg_facts(const tl::ir::Function& fn, const Options& o) {
  std::vector<tl::transforms::ArgFacts> facts;
  for (const auto& a : fn.body.args) {
    tl::transforms::ArgFacts f;
    if (o.aligned && a->type.is_scalar() && (a->type.is_ptr || tl::is_int(a->type.dtype)))
      f.divisibility = a->type.is_ptr ? 16 : o.aligned;
    facts.push_back(f);
  }
  return facts;
}

// A pass of either kind, resolved before any work.
struct Pass {
  std::string name;
  tl::transforms::PassFn tile = nullptr;
  const tl::codegen::GpuPass* gpu = nullptr;
};

void run_pass(const Pass& p, tl::ir::Function& fn, const Options& o) {
  if (p.tile) {
    p.tile(fn);
    try {
      tl::ir::verify(fn);
    } catch (const tl::Error& e) {
      throw tl::Error(std::string(e.what()) + "\n(after pass '" + p.name + "' on @" + fn.name + ")");
    }
    return;
  }
  tl::codegen::GpuContext ctx = tl::codegen::gpu_context(fn, o.target);
  ctx.num_warps = o.num_warps;
  ctx.num_ctas = o.num_ctas;
  ctx.num_stages = o.num_stages;
  ctx.warp_specialize = o.warp_specialize;
  ctx.args = arg_facts(fn, o);
  tl::codegen::run_gpu_pass(ctx, *p.gpu);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    Options opts = parse_args(argc, argv);

    // Resolve every pass before doing any work, so a typo fails fast.
    std::vector<Pass> passes;
    for (const auto& name : opts.passes) {
      Pass p{name, tl::transforms::find_pass(name), tl::codegen::find_gpu_pass(name)};
      if (!p.tile && !p.gpu)
        throw tl::Error("tiledsl-opt: expected a pass name (" + known_passes() + "), found '" + name + "'");
      if (p.gpu && opts.target.empty())
        throw tl::Error("tiledsl-opt: expected --target=T for the GPU pass '" + name + "', found none");
      passes.push_back(p);
    }

    std::string text = read_input(opts.input);
    auto module = tl::ir::parse(text, opts.input == "-" ? "<stdin>" : opts.input);
    tl::ir::verify(*module);
    if (opts.verify_only) return 0;

    for (const Pass& p : passes) {
      for (auto& fn : module->functions) run_pass(p, *fn, opts);
    }
    if (!opts.emit.empty()) {
      if (opts.target.empty()) throw tl::Error("tiledsl-opt: expected --target=T for --emit=" + opts.emit + ", found none");
      auto stage = opts.emit == "llvm" ? tl::codegen::Stage::Llvm : tl::codegen::Stage::Asm;
      std::string out;  // printed only when every function lowers
      for (auto& fn : module->functions) out += tl::codegen::lower_gpu_ir(*fn, {arg_facts(*fn, opts)}, opts.target, stage);
      std::cout << out;
      return 0;
    }
    std::cout << tl::ir::print(*module, {.locations = opts.locations});
    return 0;
  } catch (const tl::Error& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
}
