// The vocabulary shared by the tracer (header-only front end) and the
// compiler library: IR types, attributes, source locations, op kinds and the
// error type. Kept free of any IR object so the public headers stay light.
#pragma once
// The libraries are built with hidden visibility; what this header declares
// is their interface (CMakeLists.txt: "Exported symbols").
#pragma GCC visibility push(default)

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include "tiledsl/dtype.h"

namespace tl {

// Every user-facing error: trace-time, verifier, parser, launch, interpreter.
// what() starts with "file:line: " when a source location is known.
struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The most elements one tile may hold, as in Triton: the tracer and the
// verifier reject a larger tile at the line of the op that makes it, before
// any device sees it (code generation time grows with a tile's elements per
// thread; docs/language.md gives the figures).
inline constexpr int64_t max_tile_elements = int64_t(1) << 20;
// The most dimensions one tile may have, as Triton's tensor descriptors
// (whose blocks may be 5-D, e.g. [1, 1, 1, BM, BK]).
inline constexpr int max_tile_rank = 5;

// A tile dimension: a power of two times an odd count of at most 15 (192 =
// 3 x 64, 160 = 5 x 32, 96, 80 ...). A power of two is what Triton takes and
// what every target lowers; the interpreter runs the others, and a GPU
// target that cannot lower an op on such a tile says so, naming the op.
inline constexpr int64_t max_tile_dim_factor = 15;
// Of a positive d = c x 2^k (c odd): 2^k, and c.
constexpr int64_t pow2_part(int64_t d) { return d & -d; }
constexpr int64_t odd_part(int64_t d) { return d / pow2_part(d); }
inline bool is_tile_dim(int64_t d) { return d >= 1 && odd_part(d) <= max_tile_dim_factor; }
inline bool is_pow2_dim(int64_t d) { return d > 0 && (d & (d - 1)) == 0; }

namespace ir {

// A source location: the user's file and line an op was traced from.
struct Loc {
  std::string file;
  int line = 0;
  bool known() const { return line > 0; }
  std::string str() const { return known() ? file + ":" + std::to_string(line) : "<unknown>"; }
  bool operator==(const Loc&) const = default;
};

// What a value is. The Tile IR has only `value`: a scalar, or a tile of
// elements. The GPU IR adds the things its passes create: a buffer in
// shared memory (`shared`: a shape and element, with the buffer's layout
// from offsets to coordinates; several slots are a leading dimension), and
// the token an asynchronous copy or wait produces (`token`).
enum class TypeKind : uint8_t { value, shared, token };

// The type of a value: an element (a dtype, or a pointer to one) and a
// shape. Rank 0 is a scalar. `layout` is the GPU IR's: the number of the
// tile's or buffer's layout in its function's layout table (#l1, #l2, ...),
// 0 for none (every Tile IR type, and scalars).
struct Type {
  DType dtype = DType::f32;
  bool is_ptr = false;  // element is a pointer to `dtype` (global memory)
  std::vector<int64_t> shape;
  int32_t layout = 0;
  TypeKind kind = TypeKind::value;

  bool is_scalar() const { return kind == TypeKind::value && shape.empty(); }
  bool is_tile() const { return kind == TypeKind::value && !shape.empty(); }
  bool is_shared() const { return kind == TypeKind::shared; }
  bool is_token() const { return kind == TypeKind::token; }
  int rank() const { return int(shape.size()); }
  int64_t numel() const {
    int64_t n = 1;
    for (auto d : shape) n *= d;
    return n;
  }
  // Same element, other shape (and no layout).
  Type with_shape(std::vector<int64_t> s) const { return Type{dtype, is_ptr, std::move(s)}; }
  Type scalar() const { return Type{dtype, is_ptr, {}}; }
  Type with_dtype(DType d) const { return Type{d, false, shape}; }
  Type with_layout(int32_t l) const {
    Type t = *this;
    t.layout = l;
    return t;
  }
  bool operator==(const Type&) const = default;
  // Equal but for the layout (what the Tile IR's rules of an op check).
  bool same_ignoring_layout(const Type& o) const {
    return dtype == o.dtype && is_ptr == o.is_ptr && shape == o.shape && kind == o.kind;
  }

  // Text form: "f32", "ptr<bf16>", "tile<64x32xf32>", "tile<128xptr<f16>>";
  // in the GPU IR "tile<64x32xf32, #l2>", "smem<3x64x32xbf16, #l4>", "token".
  std::string str() const {
    if (kind == TypeKind::token) return "token";
    std::string e = is_ptr ? "ptr<" + std::string(dtype_name(dtype)) + ">" : std::string(dtype_name(dtype));
    if (shape.empty() && kind == TypeKind::value) return e;
    std::string s = kind == TypeKind::shared ? "smem<" : "tile<";
    for (auto d : shape) s += std::to_string(d) + "x";
    s += e;
    if (layout) s += ", #l" + std::to_string(layout);
    return s + ">";
  }
};

// Whether `t` holds more than tl::max_tile_elements (no overflow on huge dims).
inline bool exceeds_max_tile(const Type& t) {
  int64_t n = 1;
  for (int64_t d : t.shape) {
    if (d > 0 && n > max_tile_elements / d) return true;
    n *= d;
  }
  return false;
}

inline Type scalar_type(DType d) { return Type{d, false, {}}; }
inline Type ptr_type(DType d) { return Type{d, true, {}}; }
inline Type tile_type(DType d, std::vector<int64_t> shape) { return Type{d, false, std::move(shape)}; }

// Attribute values. Integers also carry booleans; floats print with a '.'.
using Attr = std::variant<int64_t, double, std::string, std::vector<int64_t>>;
using Attrs = std::map<std::string, Attr>;

enum class OpKind : uint8_t {
#define OP(Enum, Name, Traits) Enum,
#include "tiledsl/detail/ops.def"
};

}  // namespace ir
}  // namespace tl

#pragma GCC visibility pop
