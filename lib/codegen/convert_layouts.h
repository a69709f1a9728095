// Layout conversions as ops (GPU IR): after layout assignment, wherever an
// operand's layout is not the one its user needs (required_operand_layout,
// the rule layout assignment used), this pass puts the conversion in the
// IR, right before the user:
//
//   %c = convert_layout %x {move = "registers"} : tile<64x64xf32, #l4>
//   %c = convert_layout %x {move = "shared"} : tile<64x64xf32, #l4>
//   %c = convert_layout %x {move = "remat"} : tile<64x64xi32, #l4>
//
// "registers": each thread holds what it needs already, registers only
// move (no instructions, or a few moves). "shared": a round trip through
// shared memory with a barrier on each side. "remat" is chosen for cheap
// values held by other threads (index
// arithmetic and masks built from aranges, scalars, broadcasts and
// elementwise ops, within a budget of ops): the lowering recomputes them in
// the new layout from their producers, which costs a few integer ops per
// register instead of a round trip through shared memory. Splats and
// constants are not converted but made again in the layout their user
// needs (they hold one value in every register).
//
// Also converted: a loop's initial values and yields to its carried
// layout, an if's yields to its results' layouts, and after the op, a
// loop result whose layout differs from its carried value's and the
// results reductions, scans, joins and splits compute in a layout of their
// own (a reduction's: its operand's, sliced) where they were assigned
// another. A store of a value computed in another layout than its
// addresses (a dot's accumulator, say) converts the addresses and mask to
// the value's layout when they are cheap to recompute there, else the
// value to theirs.
//
// A dot's A or B defined before its loop is converted to the dot's
// fragment layout once, before the loop:
//
//   %f = convert_layout %q {instr = "mma.m16n8k16.bf16", move = "matrix_loads", operand = 0} : tile<128x64xbf16, #l9>
//
// "matrix_loads" (targets with 8x8 matrix loads, 16-bit operands of a
// k = 16 instruction): written to swizzled shared memory, a barrier on
// each side, and read back with matrix loads in the fragments of operand
// `operand` (0: A, 1: B) of `instr`, which the conversion names itself so
// that its lowering reads only the op; otherwise one of the moves above.
//
// Not converted here (the ops' lowering still does it): a dot's A and B
// operands defined in the loop, and the operand of a trans only they read,
// which reach their fragment layouts through shared memory or matrix
// loads (the shared-memory step of docs/gpu-ir-plan.md makes those
// explicit).
//
// After the pass, every tile operand is in its user's layout, which the
// lowering checks.
#pragma once

#include "codegen/assign_layouts.h"

namespace tl::codegen {

// `matrix_loads`: the target has 8x8 matrix loads.
void convert_layouts(ir::Function& fn, const LayoutPlan& plan, bool matrix_loads);

// What convert_layouts leaves, checked on GPU IR from elsewhere (read from
// text, say) before it is lowered: every operand in the layout its op needs
// on this target and every result in the layout its op makes; tl::Error
// naming the op, the operand and both layouts otherwise.
void check_layouts(const ir::Function& fn, const LayoutPlan& plan);

// The remat budgets: the ops a recomputation may take for an operand, and
// for a store's addresses and mask together.
inline constexpr int kRematBudget = 24;
inline constexpr int kStoreRematBudget = 32;

// Whether `v` can be recomputed in another layout from its producers
// within `budget` ops (which it decrements): the rule the lowering's
// recomputation follows. Conversions on the way are looked through.
bool rematerializable(const ir::Value* v, int& budget);

}  // namespace tl::codegen
