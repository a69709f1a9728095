// The CPU interpreter of Tile IR: the reference semantics of every op in
// ops.def. A function is first compiled into a Program (every SSA value gets
// a slot index, attributes are decoded once), then run for each program id
// of the grid, x fastest, sequentially, on host memory checked by Memory.
#pragma once

#include <iosfwd>
#include <memory>
#include <vector>

#include "interp/memory.h"
#include "ir/ir.h"
#include "tiledsl/runtime.h"

namespace tl::interp {

struct Program;

// Compiles `fn` for interpretation. Throws tl::Error for an op the
// interpreter does not support (naming its line). `fn` must outlive the
// Program.
std::shared_ptr<const Program> compile(const ir::Function& fn);

// One kernel argument, already checked against the parameter's type:
// pointers as addresses, integers normalized to their dtype, floats rounded.
struct ArgValue {
  int64_t i = 0;
  double f = 0;
  static ArgValue integer(int64_t v) { return {v, 0}; }
  static ArgValue floating(double v) { return {0, v}; }
};

struct RunOptions {
  std::ostream* print_to = nullptr;  // where `print` writes; null = std::cout
};

// Runs every program of `grid` (x fastest, then y, then z). A grid with a
// zero dimension runs nothing. Errors (out-of-bounds access, failed assert,
// integer division by zero, ...) are tl::Error naming the op's line and the
// program id; the launch stops at the first one.
void run(const Program& prog, Grid grid, const std::vector<ArgValue>& args, Memory& mem,
         const RunOptions& opts = {});

}  // namespace tl::interp
