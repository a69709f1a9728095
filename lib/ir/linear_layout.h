// Linear layouts: the one layout abstraction of the GPU stages. It lives in
// lib/ir, beside the types that are to carry it (docs/gpu-ir-plan.md, step 1).
//
// A layout maps hardware indices to tile coordinates. Each input dimension
// (register, lane, warp, block, or a shared-memory offset) is a number of
// bits; each output dimension (dim0, dim1, ...) a power-of-two size. The map
// is linear over GF(2): input bit i of dimension `in` has a basis vector (one
// coordinate per output dimension), and the coordinates of any index are the
// XOR of the basis vectors of its set bits. A zero basis vector means the bit
// replicates data (broadcast).
//
// A tile whose size is not a power of two (192 = 3 x 64 rows over three
// warpgroups, 160 = 5 x 32 columns of a wgmma accumulator) takes one more
// digit: an input dimension may end in a *repeat*, a count n (odd: a factor
// of two is one more bit) above its bits, whose value t adds t * stride to
// one output dimension (stride a power of two no smaller than what the bits
// reach there; all zero: the repeat replicates). Input sizes are then
// 2^bits * n and an output dimension carrying a repeat has size n * stride.
// A buffer's offsets may carry more repeats above that one (`outer`, digits
// of mixed radix, each along an output of its own): a [192, 160] buffer's
// 64-row groups and 32-column panels.
// Application, inversion, composition and products treat the repeat as its
// own digit beside the bits (docs/hopper-plan.md, "tiles that are not
// powers of two").
//
// Blocked, slice and swizzled-shared layouts are constructors of this type;
// the target-specific matrix-unit layouts are built from the same pieces in
// backends/. Vector widths, conversions and reduction plans are computed from
// the bases instead of being special-cased per pair of layouts.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ir/export.h"

TILEDSL_SHARED_BEGIN

namespace tl::ir {

class LinearLayout {
 public:
  using Coords = std::vector<int32_t>;  // one entry per output dimension

  struct InDim {
    std::string name;
    std::vector<Coords> bases;  // bases[i] = image of bit i
    int32_t repeat = 1;         // the digit above the bits: 1, or an odd count
    Coords repeat_stride = {};  // what each step of it adds (empty when repeat is 1)
    // More digits above that one, lowest first (mixed radix): a count (odd
    // or not: bits stay below the repeat) and its stride each, along
    // outputs of their own. Only a buffer's offsets take them (the rows
    // and panels of a [192, 160] tile, or of [192, 128] bf16); what
    // the layout algebra cannot do with them (compose, product, slice,
    // invert) it refuses.
    std::vector<std::pair<int32_t, Coords>> outer = {};
  };
  struct OutDim {
    std::string name;
    int32_t size;  // a power of two, or a repeat's count times its stride
  };

  LinearLayout() = default;
  // A layout from explicit bases; checks sizes and that every coordinate is
  // within its output dimension. A repeat whose count is even is stored as
  // one more bit under an odd repeat (one layout, one form).
  LinearLayout(std::vector<InDim> ins, std::vector<OutDim> outs);

  // 1-D building blocks (size is a power of two).
  static LinearLayout identity(const std::string& in, int32_t size, const std::string& out);
  static LinearLayout zeros(const std::string& in, int32_t size, const std::string& out);
  static LinearLayout empty() { return {}; }
  // Input `in` of any size n mapping value v to v along `out` (size n): a
  // repeat of stride 1 (a power of two n gives identity's bits).
  static LinearLayout repeat(const std::string& in, int32_t n, const std::string& out);

  // Product: input dimensions with the same name concatenate their bits (the
  // right operand's bits above); output dimensions with the same name
  // concatenate their coordinate bits (the right operand's above), others
  // are kept side by side. A repeat stays the highest digit: the left
  // operand's repeat cannot have bits or a repeat of the right above it,
  // nor an output dimension of a size that is not a power of two.
  LinearLayout operator*(const LinearLayout& rhs) const;

  // Applies the map: `ins` gives a value for some input dimensions (others 0).
  Coords apply(const std::vector<std::pair<std::string, int32_t>>& ins) const;

  // (outer ∘ this): this layout's outputs must be `outer`'s inputs by name.
  // A repeat of this layout must stay one through `outer` (t * stride maps
  // to t times one power of two along one output, as when outer carries the
  // same repeat).
  LinearLayout compose(const LinearLayout& outer) const;

  // For an injective and surjective layout, its inverse (outputs become
  // inputs). For a surjective layout with broadcast bits, a right inverse
  // that never sets a broadcast bit. Returns nullopt when not surjective.
  std::optional<LinearLayout> invert() const;

  // dst⁻¹ ∘ this: for each hardware index of this layout, the hardware index
  // of `dst` that holds the same coordinates. Both must cover the same
  // output space; nullopt when `dst` does not cover all of it.
  std::optional<LinearLayout> invert_and_compose(const LinearLayout& dst) const;

  // Accessors.
  const std::vector<InDim>& in_dims() const { return ins_; }
  const std::vector<OutDim>& out_dims() const { return outs_; }
  int in_bits(const std::string& in) const;   // 0 when absent; the repeat is not a bit
  const std::vector<Coords>& bases(const std::string& in) const;  // empty when absent
  int32_t repeat_count(const std::string& in) const;  // 1 when absent or without a repeat; all digits' product
  int32_t in_size(const std::string& in) const { return (int32_t(1) << in_bits(in)) * repeat_count(in); }
  int32_t out_size(const std::string& out) const;  // 1 when absent
  int out_index(const std::string& out) const;     // -1 when absent
  int total_in_bits() const;
  int total_out_bits() const;

  // Bits of `in` whose basis vector is zero (they replicate data; a repeat
  // of zero stride does too, and is not a bit).
  uint32_t broadcast_mask(const std::string& in) const;
  // The same layout with the broadcast bits (and a replicating repeat) of
  // `in` removed (compacted).
  LinearLayout remove_broadcast(const std::string& in) const;
  // True if no bit of `in` moves along output dimension `out`.
  bool constant_along(const std::string& in, int out) const;

  // The number of consecutive elements along `out` held in consecutive
  // values of input `in` starting at 0: the largest 2^k such that bits
  // 0..k-1 of `in` map to 1, 2, 4, ... along `out` and 0 elsewhere. With
  // `stride`, in steps of it (bits map to stride, 2 * stride, ...): how
  // far `in` continues a run another input began (lanes after a thread's
  // registers).
  int32_t contiguous_run(const std::string& in, int out, int32_t stride = 1) const;

  // Removes output dimension `out` (a slice layout): its coordinates are
  // dropped, and register bits that became duplicates or zero are removed
  // (a register repeat along `out` too; other inputs' repeats replicate).
  // Output dimensions named by position (dimK) after it are renamed.
  LinearLayout slice(int out) const;

  // Renames an input dimension (e.g. to compose shared-memory layouts).
  LinearLayout rename_in(const std::string& from, const std::string& to) const;

  bool operator==(const LinearLayout& o) const;
  // Throws naming `op` when an input has outer repeats.
  void refuse_outer(const char* op) const;
  std::string str() const;

 private:
  std::vector<InDim> ins_;
  std::vector<OutDim> outs_;
};

// Standard input-dimension names.
inline const std::string kReg = "register", kLane = "lane", kWarp = "warp", kBlock = "block",
                         kOffset = "offset";
std::string dim_name(int d);  // "dim0", "dim1", ...

// The distributed layout Triton calls "blocked": each thread holds a
// size_per_thread sub-tile, threads of a warp and warps of a block tile the
// tensor in `order` (order[0] is the fastest-varying dimension). A tile
// larger than one pass of the block repeats in registers; a smaller one
// broadcasts (lanes or warps that would go past the edge hold copies).
// `ctas_per_cluster` (optional) splits the tile over the CTAs of a
// cluster ("block" input), above the register repeats.
LinearLayout blocked_layout(const std::vector<int64_t>& shape, const std::vector<int>& size_per_thread,
                            const std::vector<int>& threads_per_warp, const std::vector<int>& warps_per_block,
                            const std::vector<int>& order, const std::vector<int>& ctas_per_cluster = {});

// A 2-D shared-memory layout: input "offset" (element offset in the buffer)
// to (dim0, dim1). Rows of the fast dimension order[0] are stored
// contiguously; `vec` elements form an unswizzled chunk; the chunk index of
// row r is XORed with (r / per_phase) % max_phase. With vec = 16 bytes of
// elements this keeps ldmatrix-style row accesses free of bank conflicts.
LinearLayout swizzled_shared_layout(const std::vector<int64_t>& shape, int vec, int per_phase, int max_phase,
                                    const std::vector<int>& order);

}  // namespace tl::ir

TILEDSL_SHARED_END
