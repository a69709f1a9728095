// A tensor map a kernel takes by value after its own parameters (a
// tensor_map op of its GPU IR, ops.def): what the launcher encodes it from
// at each launch. The compile describes it (codegen::CompiledKernel), the
// kernel cache keeps the description beside the binary, the launcher
// passes the encoded 128 bytes. LLVM-free and vendor-free.
#pragma once

#include <cstdint>
#include <vector>

#include "tiledsl/dtype.h"

namespace tl::runtime {

struct TensorMapParam {
  // A size or stride: `value` times the arguments `args` names (each once
  // per mention), as the kernel's i32 multiplication computes it (wrapped
  // to 32 bits); with no arguments, the constant `value`.
  struct Operand {
    int64_t value = 1;
    std::vector<int> args;
    static Operand argument(int i) { return {1, {i}}; }
    static Operand constant(int64_t v) { return {v, {}}; }
    int64_t of(const std::vector<int64_t>& values) const {
      if (args.empty()) return value;
      uint64_t p = uint64_t(value);
      for (int i : args) p *= uint64_t(values[size_t(i)]);
      return int64_t(int32_t(uint32_t(p)));
    }
    bool operator==(const Operand&) const = default;
  };
  DType dtype = DType::bf16;
  int base_arg = 0;                     // the pointer argument the tensor starts at
  std::vector<Operand> sizes, strides;  // outermost dimension first; strides in elements
  std::vector<int64_t> box;             // the box one copy moves, outermost first
  int swizzle_bytes = 0;                // 0, 32, 64 or 128
  bool operator==(const TensorMapParam&) const = default;
};

// The 128 bytes of an encoded map, as a launch passes them.
struct alignas(64) TensorMapBytes {
  uint8_t bytes[128] = {};
};

}  // namespace tl::runtime
