// Layouts of `dot`: which thread holds which element of A [M, K], B [K, N]
// and the accumulator C [M, N].
//
// On a matrix unit one instruction multiplies an
// m x k by a k x n fragment held across one warp; the back end describes it
// by three small linear layouts (register, lane -> fragment coordinates).
// The tile layouts repeat that fragment in registers and spread warps over
// M and N, so the lowering only walks (m, n, k) instruction indices and
// picks the registers of each. Without a matrix unit (f64, exact f32, small
// tiles) the FMA form keeps C in a blocked layout and gives each thread the
// rows of A and columns of B its C elements need.
//
// LLVM-free: layout assignment and the lowering both use it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/linear_layout.h"
#include "tiledsl/dtype.h"

namespace tl::codegen {

// The layout vocabulary of lib/ir/linear_layout.h, under the names the GPU
// stages use (until layouts live on the IR's types).
using ir::blocked_layout;
using ir::dim_name;
using ir::kBlock;
using ir::kLane;
using ir::kOffset;
using ir::kReg;
using ir::kWarp;
using ir::LinearLayout;
using ir::swizzled_shared_layout;

// One matrix instruction as a back end describes it. Register order within
// each fragment layout is the order the instruction takes its operands in,
// element by element (the back end packs them into its registers).
struct MatrixInstr {
  std::string name;  // for dumps and messages, e.g. "mma.m16n8k16.bf16"
  int m = 0, n = 0, k = 0;
  DType in = DType::bf16;   // A and B element type
  DType acc = DType::f32;   // accumulator element type
  LinearLayout a, b, c;     // (register, lane) -> [m, k], [k, n], [m, n]
  // A warpgroup instruction: `warps` warps run it together, c maps
  // (register, lane, warp) -> [m, n], and B is read from shared memory
  // through a descriptor (b is unused: any operand layout will do, it is
  // stored to shared memory as it is). So is A, unless it comes from
  // registers (DotLayouts::a_in_registers): then a maps (register, lane,
  // warp) -> [m, k] like c (empty: the instruction cannot).
  int warps = 1;
  bool operands_in_smem = false;
  // Where such an instruction's operands start in shared memory: a
  // multiple of this many bytes (the target's rule: a whole swizzle
  // pattern on sm_90a).
  int64_t operand_align = 0;
};

struct DotLayouts {
  LinearLayout a, b, c;              // [M, K], [K, N], [M, N] over register, lane, warp
  std::optional<MatrixInstr> instr;  // absent: the FMA form
  int warps_m = 1, warps_n = 1;      // warps along M and N (the rest replicate)
  int reps_m = 1, reps_n = 1, reps_k = 1;  // instructions per warp along M, N, K
  // A warpgroup instruction's A taken from registers (in layout a, the
  // instruction's fragments) rather than shared memory.
  bool a_in_registers = false;

  // Whether the dot runs on a warpgroup instruction (B, and A unless
  // a_in_registers, in shared memory).
  bool on_warpgroups() const { return instr && instr->operands_in_smem; }
  // Whether operand `i` (0: A, 1: B) is read from shared memory by the
  // instruction itself.
  bool operand_in_smem(int i) const { return on_warpgroups() && !(i == 0 && a_in_registers); }

  // Register index, in C's tile layout, of register `r` of the fragment of
  // instruction (i, j) (A's and B's: OperandFragments::reg).
  int c_reg(int i, int j, int r) const;
};

// Registers a thread needs at the kernel's entry for one warpgroup
// instruction of `d` (d.on_warpgroups()): its accumulator fragment, A's
// where A comes from registers, and what ptxas keeps beside them (CUDA
// 13's ptxas: an m64nN product with f32 accumulators needs N / 2 + 26).
// ptxas checks a wgmma against the kernel's entry count, not against what
// setmaxnreg later gives the warpgroup (docs/hopper-plan.md, 4000³), so
// this bounds the products a kernel of so many threads can issue.
int warpgroup_instr_registers(const DotLayouts& d);

// The error's text when `need` registers (warpgroup_instr_registers) do
// not fit the `entry` registers a thread of `threads` has; empty when they
// fit.
std::string warpgroup_register_shortfall(const DotLayouts& d, int entry, int threads);

// The fragments of one operand of a dot on a matrix instruction (operand
// 0: A [M, K], 1: B [K, N]) in the operand's tile layout: `regs` registers
// a fragment, the K steps next, then the repeats along M (A) or N (B), the
// register order matrix_dot_layouts gives.
struct OperandFragments {
  LinearLayout layout;
  int operand = 0;
  int regs = 0;
  int reps_k = 1, reps_outer = 1;

  // Register index of register `r` of the fragment of repeat `o` along M
  // or N and K step `s`.
  int reg(int o, int s, int r) const { return r + regs * (s + reps_k * o); }
};

// Operand `i` of a dot with layouts `d` (on a matrix instruction).
OperandFragments operand_fragments(const DotLayouts& d, int i);

// Operand `i` of a dot on `instr` as a tile of `shape` in `layout` tells it
// alone (a conversion to a dot's fragments, which names its instruction and
// operand): nullopt where the layout's registers and lanes are not the
// instruction's fragments repeated along K and then M or N.
std::optional<OperandFragments> operand_fragments(const MatrixInstr& instr, const LinearLayout& layout, int i,
                                                  const std::vector<int64_t>& shape);

// Whether `instr` can tile an M x N x K dot with `num_warps` warps.
bool fits(const MatrixInstr& instr, int64_t M, int64_t N, int64_t K);

// The tiled layouts of a dot on `instr`. For a warpgroup instruction the
// groups of `instr.warps` warps all go along M (the target's picker checked
// that M splits evenly). `warps_along_m` puts every warp on M
// (each warp owns whole rows of C), so that C converts to the A operand of
// a following dot without moving data between threads. `a_in_registers`
// (warpgroup instructions whose `a` is not empty): A in the instruction's
// register fragments.
//
// `num_ctas` > 1 (a program on a cluster, warpgroup instructions only):
// M is split over the CTAs, each computing M / num_ctas contiguous rows of
// C from the same rows of A, with the whole of B (its layout has no CTA
// bits: every CTA holds it, and a tensor copy may multicast it). The
// caller checks that M / num_ctas fits the instruction (split_ctas).
DotLayouts matrix_dot_layouts(const MatrixInstr& instr, int64_t M, int64_t N, int64_t K, int num_warps,
                              bool warps_along_m, bool a_in_registers = false, int num_ctas = 1);
// The CTAs a dot of M x N x K on `instr` splits its rows over in a
// program of `num_ctas` (matrix_dot_layouts): all of them where M splits
// evenly into parts the warpgroup instruction fits, else 1 (its layouts
// name no CTA, and the lowering refuses it on a cluster).
int split_ctas(const MatrixInstr& instr, int64_t M, int64_t N, int64_t K, int num_warps, int num_ctas);

// The FMA form: C in the default blocked layout; A and B hold, per thread,
// the full K extent of the rows and columns of its C elements.
DotLayouts fma_dot_layouts(int64_t M, int64_t N, int64_t K, int num_warps, int warp_size);

}  // namespace tl::codegen
