// Tensor maps: the 128-byte descriptors through which tensor copies (TMA,
// cp.async.bulk.tensor; tma_load and tma_store in the GPU IR) address a
// tensor in global memory: its element type, address, sizes and strides,
// the box one copy moves and how the box is swizzled in shared memory.
// The driver encodes them (cuTensorMapEncodeTiled); its rules are checked
// here first, since the driver's only answer is CUDA_ERROR_INVALID_VALUE.
//
// LLVM-free, and free of cuda.h (cuda_driver.h says why).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "codegen/compile.h"
#include "tiledsl/dtype.h"

namespace tl::nvptx {

class CudaDriver;

// An encoded map (CUtensorMap): where it lives, a kernel reads it by its
// address (global or constant memory, or a kernel parameter).
struct alignas(64) TensorMap {
  uint64_t words[16] = {};
};
static_assert(sizeof(TensorMap) == 128);

// A tensor of `shape` (outermost dimension first, ranks 1-5) at `address`,
// dimension d `strides[d]` elements apart (the last 1: contiguous), moved
// in boxes of `box` elements (outermost first) stored in shared memory with
// the swizzle of `swizzle_bytes` (0 for none, 32, 64 or 128; the box's
// rows are as wide at most). Out-of-range elements read as zero.
struct TensorMapSpec {
  DType dtype = DType::bf16;
  uint64_t address = 0;
  std::vector<int64_t> shape, strides, box;
  int swizzle_bytes = 0;
};

// The first of TMA's rules `s` breaks, said as expected vs found; "" when
// it keeps them all.
std::string tensor_map_problem(const TensorMapSpec& s);

// The map a kernel's tensor_map describes (codegen::TensorMapParam) for a
// launch whose arguments have the values `args` (a pointer's: its address).
TensorMapSpec tensor_map_spec(const codegen::TensorMapParam& p, const std::vector<int64_t>& args);

// A tensor with no elements (a size of 0, which a map cannot hold) reads
// as zeros wherever a box lies: the map of a tensor of ones in every
// dimension at `zeros` (16 bytes of zeros, 16-byte aligned), same box and
// swizzle, does that. (A store through it would write there: tensor
// stores must skip such a tensor.)
bool has_no_elements(const TensorMapSpec& s);
TensorMapSpec empty_tensor_spec(const TensorMapSpec& s, uint64_t zeros);

// Encodes `s`. Throws tl::Error with the rule it breaks, or the driver's
// error, or that the driver has no tensor maps (before CUDA 12).
TensorMap encode_tensor_map(const CudaDriver& driver, const TensorMapSpec& s);

}  // namespace tl::nvptx
