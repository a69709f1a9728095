// Axis analysis: for every integer or pointer value, per dimension,
//   contiguity   — the length of runs of consecutive values (+1 steps;
//                  for pointers, +1 element),
//   divisibility — the largest power of two dividing the first value of
//                  each run (bytes for pointers, units for integers),
//   constancy    — the length of runs of equal values.
// Runs start at multiples of their length. This is what lets a load of
// `x + offs` become a 16-byte vector access: the vector width is bounded by
// the pointer's contiguity and alignment and by the mask's constancy.
//
// Kernel arguments are seeded from their specialization (integers known to
// be divisible by 16 or equal to 1, pointers aligned to 16 bytes).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <unordered_map>
#include <vector>

#include "ir/export.h"
#include "ir/ir.h"

TILEDSL_SHARED_BEGIN

namespace tl::transforms {

struct AxisInfo {
  // One entry per dimension; a scalar has one entry describing itself.
  std::vector<int64_t> contiguity, divisibility, constancy;
  std::optional<int64_t> value;  // known constant (scalar or splat)

  static AxisInfo unknown(int rank);
  int rank() const { return int(contiguity.size()); }
};

// What is known of a kernel argument before tracing sees its value.
struct ArgFacts {
  int64_t divisibility = 1;        // 16 or 8 when specialized as such
  std::optional<int64_t> value;    // 1 when specialized as equal to one
};

class AxisAnalysis {
 public:
  // Analyses `fn`; `args` gives facts per kernel argument (missing: unknown).
  explicit AxisAnalysis(const ir::Function& fn, const std::vector<ArgFacts>& args = {});
  const AxisInfo& get(const ir::Value* v) const;

  // Elements of a load/store along dimension `dim` of the pointer tile
  // (-1: the last) that one vector access may cover: min(contiguity,
  // alignment / element size, 16 bytes / element size, mask constancy).
  // 1 for scalars.
  int vector_width(const ir::Op& load_or_store, int dim = -1) const;
  // The dimension with the widest accesses (the last one on a tie): a
  // column-major tile is accessed along dimension 0.
  int fast_dim(const ir::Op& load_or_store) const;

 private:
  void visit(const ir::Op& op);
  void run_loop(const ir::Op& loop, const std::function<void(const ir::Region&)>& run);
  std::unordered_map<const ir::Value*, AxisInfo> info_;
  // What tl::assume promises: values divisible by a power of two.
  std::unordered_map<const ir::Value*, int64_t> assumed_divisor_;
  void find_assumptions(const ir::Region& r);
  void with_assumptions(const ir::Value* v, AxisInfo& a) const;
  // Per loop, the carried facts its last analysis settled on (run_loop).
  std::unordered_map<const ir::Op*, std::vector<AxisInfo>> settled_;
};

// The largest power of two dividing v (a cap for 0).
int64_t highest_pow2_divisor(int64_t v);

}  // namespace tl::transforms

TILEDSL_SHARED_END
