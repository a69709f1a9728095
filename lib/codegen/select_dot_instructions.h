// Dot instruction selection, the first GPU pass ("select-dot-instructions",
// pipeline.h): each dot of the Tile IR gets the matrix instruction it will
// run on as its `instr` attribute, before layouts are assigned (the layouts
// of its operands and result follow from the instruction):
//
//   %c = dot %a, %b, %acc {instr = "<the instruction's name, as its back end gives it>"}
//
// A warpgroup instruction where the target has one for the dot and its B
// is loaded beside it (a warpgroup instruction reads it from shared memory
// as it lands). A loaded beside it too is read the same way; any other A
// (a product's probabilities, a tile loaded before the loop) is read from
// registers where the instruction can, which the dot then says:
//
//   %o = dot %p, %v, %acc {a_in = "registers", instr = "<a warpgroup instruction>"}
//
// Else the target's register-operand instruction; "fma" (multiply-adds on
// the cores) where none tiles the dot with the kernel's warps. f8 operands
// on a target without an f8 instruction but with an f16 one are widened to
// f16 first (exact), by casts before the dot.
#pragma once

#include <optional>

#include "codegen/dot_layout.h"
#include "ir/ir.h"

namespace tl::codegen {

struct TargetInfo;

void select_dot_instructions(ir::Function& fn, const TargetInfo& t, int num_warps);

// The instruction a dot's `instr` names (nullopt for "fma"); throws
// tl::Error naming the dot when it has none, or one `t` does not have.
std::optional<MatrixInstr> chosen_instr(const ir::Op& dot, const TargetInfo& t, int num_warps);

// Whether a dot on a warpgroup instruction takes A from registers (its
// `a_in` attribute).
bool a_in_registers(const ir::Op& dot);

// The register-operand instruction of `t` for `in` called `name`, if there
// is one (an `instr` attribute outside a dot's: a conversion to its
// fragments).
std::optional<MatrixInstr> matrix_instr_named(const TargetInfo& t, DType in, const std::string& name);

}  // namespace tl::codegen
