// AMD matrix instructions for dot: MFMA on CDNA2/CDNA3 (gfx90a, gfx942,
// wave64) and WMMA on RDNA3 (gfx1100, wave32), described as fragment linear
// layouts and emitted through the llvm.amdgcn.mfma.* / llvm.amdgcn.wmma.*
// intrinsics. See matrix_unit.cpp for the layouts and where they come from.
//
// LLVM-free (LLVM types are only declared), so that host-only tests can read
// the layouts.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "codegen/dot_layout.h"

namespace llvm {
class IRBuilderBase;
class Value;
}  // namespace llvm

namespace tl::codegen::amdgpu {

// The instruction for a dot of `in` x `in` on `arch` ("gfx90a", "gfx942",
// "gfx1100"), or nullopt (the lowering then uses FMAs).
std::optional<MatrixInstr> matrix_instr(const std::string& arch, DType in, bool allow_tf32);

// c + a x b on one instruction returned by matrix_instr (registers as
// described in codegen/target.h).
std::vector<llvm::Value*> matrix_multiply(llvm::IRBuilderBase& b, const MatrixInstr& instr,
                                          const std::vector<llvm::Value*>& a, const std::vector<llvm::Value*>& bv,
                                          const std::vector<llvm::Value*>& c);

}  // namespace tl::codegen::amdgpu
