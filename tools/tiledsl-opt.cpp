// tiledsl-opt: the Tile IR driver for tests and debugging, like mlir-opt.
//
//   tiledsl-opt <file.tir | -> [--pass=name]... [--verify-only] [--no-locs]
//
// Parses the text form, verifies it, runs the named passes in order
// (verifying after each, so a pass that breaks the IR is named), and prints
// the result to stdout. With --verify-only it prints nothing on success.
// Errors go to stderr as the tl::Error text and the exit code is 1, so a
// FileCheck test can check a diagnostic with
//   // RUN: not tiledsl-opt %s 2>&1 | FileCheck %s
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "transforms/passes.h"

namespace {

constexpr const char* kUsage = "usage: tiledsl-opt <file.tir | -> [--pass=name]... [--verify-only] [--no-locs]";

struct Options {
  std::string input;
  std::vector<std::string> passes;
  bool verify_only = false;
  bool locations = true;
};

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
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    Options opts = parse_args(argc, argv);

    // Resolve every pass before doing any work, so a typo fails fast.
    std::vector<tl::transforms::PassFn> passes;
    for (const auto& name : opts.passes) {
      auto fn = tl::transforms::find_pass(name);
      if (!fn) throw tl::Error("tiledsl-opt: expected a pass name (" + known_passes() + "), found '" + name + "'");
      passes.push_back(fn);
    }

    std::string text = read_input(opts.input);
    auto module = tl::ir::parse(text, opts.input == "-" ? "<stdin>" : opts.input);
    tl::ir::verify(*module);
    if (opts.verify_only) return 0;

    for (size_t i = 0; i < passes.size(); ++i) {
      for (auto& fn : module->functions) {
        passes[i](*fn);
        try {
          tl::ir::verify(*fn);
        } catch (const tl::Error& e) {
          throw tl::Error(std::string(e.what()) + "\n(after pass '" + opts.passes[i] + "' on @" + fn->name + ")");
        }
      }
    }
    std::cout << tl::ir::print(*module, {.locations = opts.locations});
    return 0;
  } catch (const tl::Error& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
}
