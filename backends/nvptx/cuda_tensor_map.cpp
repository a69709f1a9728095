// Tensor maps (see cuda_tensor_map.h). The rules are those of the CUDA
// driver API's cuTensorMapEncodeTiled for maps without interleave.
#include "nvptx/cuda_tensor_map.h"

#include <algorithm>

#include "nvptx/cuda_driver.h"
#include "tiledsl/detail/ir_types.h"

namespace tl::nvptx {

namespace {

// CUtensorMapDataType; -1: none (i1 has no map).
int map_dtype(DType d) {
  switch (d) {
    case DType::i8:
    case DType::u8:
    case DType::f8e4m3:
    case DType::f8e5m2: return 0;  // UINT8: 8-bit data is bytes to a copy
    case DType::i16:
    case DType::u16: return 1;     // UINT16
    case DType::u32: return 2;
    case DType::i32: return 3;
    case DType::u64: return 4;
    case DType::i64: return 5;
    case DType::f16: return 6;
    case DType::f32: return 7;
    case DType::f64: return 8;
    case DType::bf16: return 9;
    case DType::i1: break;
  }
  return -1;
}

std::string list(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

}  // namespace

std::string tensor_map_problem(const TensorMapSpec& s) {
  size_t rank = s.shape.size();
  int eb = byte_size(s.dtype);
  if (map_dtype(s.dtype) < 0) return "expected an element type a tensor map holds, found " + std::string(dtype_name(s.dtype));
  if (rank < 1 || rank > 5) return "expected a tensor of rank 1 to 5, found rank " + std::to_string(rank);
  if (s.strides.size() != rank || s.box.size() != rank)
    return "expected a stride and a box size a dimension (" + std::to_string(rank) + "), found " +
           std::to_string(s.strides.size()) + " and " + std::to_string(s.box.size());
  if (s.address % 16) return "expected a base address aligned to 16 bytes, found " + std::to_string(s.address);
  for (size_t d = 0; d < rank; ++d) {
    if (s.shape[d] < 1 || s.shape[d] > (int64_t(1) << 32))
      return "expected sizes of 1 to 2^32, found " + list(s.shape);
    if (s.box[d] < 1 || s.box[d] > 256) return "expected box sizes of 1 to 256, found " + list(s.box);
  }
  if (s.strides[rank - 1] != 1)
    return "expected a contiguous last dimension (stride 1), found strides " + list(s.strides);
  for (size_t d = 0; d + 1 < rank; ++d)
    if ((s.strides[d] * eb) % 16 || s.strides[d] <= 0 || s.strides[d] * eb >= (int64_t(1) << 40))
      return "expected strides of a multiple of 16 bytes (" + std::to_string(16 / std::min(eb, 16)) +
             " elements), found " + list(s.strides);
  int64_t row = s.box[rank - 1] * eb;
  if (row % 16) return "expected a box " + std::to_string(16 / eb) + " elements (16 bytes) wide or a multiple, found " + list(s.box);
  if (s.swizzle_bytes != 0 && s.swizzle_bytes != 32 && s.swizzle_bytes != 64 && s.swizzle_bytes != 128)
    return "expected a swizzle of 0, 32, 64 or 128 bytes, found " + std::to_string(s.swizzle_bytes);
  if (s.swizzle_bytes && row > s.swizzle_bytes)
    return "expected a box at most as wide as its " + std::to_string(s.swizzle_bytes) + "-byte swizzle, found " +
           std::to_string(row) + " bytes";
  return "";
}

TensorMapSpec tensor_map_spec(const codegen::TensorMapParam& p, const std::vector<int64_t>& args) {
  TensorMapSpec s;
  s.dtype = p.dtype;
  s.address = uint64_t(args.at(size_t(p.base_arg)));
  for (const auto& o : p.sizes) s.shape.push_back(o.of(args));
  for (const auto& o : p.strides) s.strides.push_back(o.of(args));
  s.box = p.box;
  s.swizzle_bytes = p.swizzle_bytes;
  return s;
}

bool has_no_elements(const TensorMapSpec& s) {
  return std::any_of(s.shape.begin(), s.shape.end(), [](int64_t n) { return n == 0; });
}

TensorMapSpec empty_tensor_spec(const TensorMapSpec& s, uint64_t zeros) {
  TensorMapSpec e = s;
  e.address = zeros;
  e.shape.assign(s.shape.size(), 1);
  int64_t row = std::max(1, 16 / byte_size(s.dtype));  // 16 bytes in elements
  for (size_t d = 0; d + 1 < e.strides.size(); ++d) e.strides[d] = row;
  if (!e.strides.empty()) e.strides.back() = 1;
  return e;
}

TensorMap encode_tensor_map(const CudaDriver& driver, const TensorMapSpec& s) {
  if (std::string why = tensor_map_problem(s); !why.empty()) throw Error("tensor map: " + why);
  if (!driver.cuTensorMapEncodeTiled)
    throw Error("tensor map: the CUDA driver " + driver.library() + " has no cuTensorMapEncodeTiled (CUDA 12 or later)");
  // The driver's order is innermost first; strides in bytes, of every
  // dimension but the innermost.
  size_t rank = s.shape.size();
  int eb = byte_size(s.dtype);
  uint64_t dims[5], strides[5];
  uint32_t box[5], ones[5] = {1, 1, 1, 1, 1};
  for (size_t i = 0; i < rank; ++i) {
    size_t d = rank - 1 - i;
    dims[i] = uint64_t(s.shape[d]);
    box[i] = uint32_t(s.box[d]);
    if (i > 0) strides[i - 1] = uint64_t(s.strides[d] * eb);
  }
  int swizzle = s.swizzle_bytes == 128 ? 3 : s.swizzle_bytes == 64 ? 2 : s.swizzle_bytes == 32 ? 1 : 0;
  TensorMap map;
  driver.check(driver.cuTensorMapEncodeTiled(&map, map_dtype(s.dtype), uint32_t(rank),
                                             reinterpret_cast<void*>(s.address), dims, strides, box, ones,
                                             /*interleave none*/ 0, swizzle, /*L2 promotion 128B*/ 2,
                                             /*out of range: zeros*/ 0),
               "cuTensorMapEncodeTiled");
  return map;
}

}  // namespace tl::nvptx
