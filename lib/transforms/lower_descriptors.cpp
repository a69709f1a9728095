// lower-descriptors: a tensor descriptor's block (descriptor_load,
// descriptor_store; ops.def) as the masked pointer load or store it means,
// on every target. The interpreter runs this form, and the GPU passes
// start from it (their first pass), so a descriptor's meaning is written
// once, here.
//
// For each dimension d of a block of rank r: the offsets
// c[d] + arange(0, block[d]), of size 1 along every other dimension; their
// addresses step by stride[d]; they lie inside the tensor where
// 0 <= offset < shape[d], one unsigned compare (a negative offset is past
// any i32 size as unsigned). The addresses and the masks grow a dimension
// at a time (shape block[0..d] x 1...), so a thread computes each
// dimension's part once, as the kernel author would write it; outside
// elements load as 0 and are not stored.
//
// Offsets times strides are multiplied in i64 (the i32 operands widened):
// an offset of a tensor of more than 2^31 elements (a row past 2^31 / the
// row stride, a batch of a large [B, H, N, D]) would wrap in i32 and
// address memory before the tensor, where Triton's descriptors address it.
//
// A block of rank > 2 whose leading sizes are 1 is the tile of its last
// two dimensions at an address and under a test the leading coordinates
// give (scalars), reshaped to the block.
//
// A store `keep` accepts (a tensor copy, on targets that have them) stays
// where all its coordinates are non-negative, and is this masked store
// elsewhere (guard_store).
#include "transforms/passes.h"

#include <unordered_map>

namespace tl::transforms {

namespace {

using ir::OpKind;
using ir::Type;
using ir::Value;

class Lowering {
 public:
  explicit Lowering(ir::Op& op) : op_(op), b_(op.parent, op.parent->find(&op)), block_(op.attr_ints("block")) {
    b_.loc = op.loc;
    while (block_.size() > 2 && lead_ < block_.size() - 2 && block_[lead_] == 1) ++lead_;
  }

  // The block's addresses and which of them lie inside the tensor, over
  // its dimensions from lead_ on (the leading 1s before them are one
  // scalar offset and one scalar test: a head's [N, D] of [B * H, N, D]
  // is a 2-D tile, as the kernel author would write it).
  std::pair<Value*, Value*> addresses() {
    const size_t r = block_.size();
    Value* base = op_.operands[0];
    Value* base_ok = nullptr;
    const Type u32 = ir::scalar_type(DType::u32), i1 = ir::scalar_type(DType::i1);
    for (size_t d = 0; d < lead_; ++d) {
      Value* coord = op_.operands[1 + 2 * r + d];
      Value* step = b_.create1(OpKind::Mul, {wide(coord), wide(op_.operands[1 + r + d])}, ir::scalar_type(DType::i64));
      base = b_.create1(OpKind::AddPtr, {base, step}, base->type);
      Value* in = b_.create1(OpKind::Cmp, {b_.create1(OpKind::Cast, {coord}, u32), b_.create1(OpKind::Cast, {op_.operands[1 + d]}, u32)},
                             i1, {{"pred", std::string("lt")}});
      base_ok = base_ok ? b_.create1(OpKind::And, {base_ok, in}, i1) : in;
    }
    auto [ptrs, ok] = tile_addresses(base);
    if (base_ok) ok = b_.create1(OpKind::And, {ok, splat(base_ok, ok->type.shape)}, ok->type);
    return {ptrs, ok};
  }

  std::pair<Value*, Value*> tile_addresses(Value* base) {
    const size_t r = block_.size();
    Value *ptrs = nullptr, *ok = nullptr;
    std::vector<int64_t> grown;  // the shape after dimensions lead_..d
    for (size_t d = lead_; d < r; ++d) {
      Value* size = op_.operands[1 + d];
      Value* stride = op_.operands[1 + r + d];
      Value* coord = op_.operands[1 + 2 * r + d];
      Type line = ir::tile_type(DType::i32, {block_[d]});
      Value* offs = b_.create1(OpKind::Arange, {}, line, {{"start", int64_t(0)}, {"end", block_[d]}});
      offs = b_.create1(OpKind::Add, {offs, splat(coord, line.shape)}, line);
      std::vector<int64_t> shape = {block_[d]};
      for (size_t a = lead_; a < r; ++a)
        if (a != d) {
          shape.insert(shape.begin() + long(a - lead_), 1);
          offs = b_.create1(OpKind::ExpandDims, {offs}, line.with_shape(shape), {{"axis", int64_t(a - lead_)}});
        }
      Value* unsigned_offs = b_.create1(OpKind::Cast, {offs}, ir::tile_type(DType::u32, shape));
      Value* unsigned_size = b_.create1(OpKind::Cast, {size}, ir::scalar_type(DType::u32));
      Value* in = b_.create1(OpKind::Cmp, {unsigned_offs, splat(unsigned_size, shape)},
                             ir::tile_type(DType::i1, shape), {{"pred", std::string("lt")}});
      Value* step = b_.create1(OpKind::Mul, {wide(offs), splat(wide(stride), shape)}, ir::tile_type(DType::i64, shape));
      grown = std::vector<int64_t>(block_.begin() + long(lead_), block_.begin() + long(d) + 1);
      grown.resize(r - lead_, 1);
      if (!ptrs) {
        ptrs = b_.create1(OpKind::AddPtr, {splat(base, shape), step}, base->type.with_shape(shape));
        ok = in;
      } else {
        ptrs = b_.create1(OpKind::AddPtr, {broadcast(ptrs, grown), broadcast(step, grown)},
                          base->type.with_shape(grown));
        ok = b_.create1(OpKind::And, {broadcast(ok, grown), broadcast(in, grown)}, ir::tile_type(DType::i1, grown));
      }
    }
    return {ptrs, ok};
  }

  void run() {
    auto [ptrs, ok] = addresses();
    const std::vector<int64_t>& tile = ok->type.shape;  // the block without its leading 1s
    if (op_.kind == OpKind::DescriptorLoad) {
      Type t = op_.result()->type.with_shape(tile);
      ir::Attr zero = is_float(t.dtype) ? ir::Attr(0.0) : ir::Attr(int64_t(0));
      Value* other = b_.create1(OpKind::Constant, {}, t, {{"value", zero}});
      replaced_ = b_.create1(OpKind::Load, {ptrs, ok, other}, t);
      if (t != op_.result()->type) replaced_ = b_.create1(OpKind::Reshape, {replaced_}, op_.result()->type);
    } else {
      Value* v = op_.operands.back();
      if (v->type.shape != tile) v = b_.create1(OpKind::Reshape, {v}, v->type.with_shape(tile));
      b_.create(OpKind::Store, {ptrs, v, ok}, {});
    }
  }
  Value* replaced() const { return replaced_; }

 private:
  Value* splat(Value* scalar, const std::vector<int64_t>& shape) {
    return b_.create1(OpKind::Splat, {scalar}, scalar->type.with_shape(shape));
  }
  // An i32 value as i64 (sign-extended).
  Value* wide(Value* v) { return b_.create1(OpKind::Cast, {v}, Type{DType::i64, false, v->type.shape}); }
  Value* broadcast(Value* v, const std::vector<int64_t>& shape) {
    return v->type.shape == shape ? v : b_.create1(OpKind::Broadcast, {v}, v->type.with_shape(shape));
  }

  ir::Op& op_;
  ir::Builder b_;
  std::vector<int64_t> block_;
  size_t lead_ = 0;  // the leading dimensions of size 1 (all but the last two at most)
  Value* replaced_ = nullptr;
};

}  // namespace

namespace {

// A kept store as `if (every coordinate >= 0) { the store } else { the
// masked store it means }`: a tensor copy out of shared memory traps on a
// negative coordinate (ops.def's tma_store), where the block must be
// clipped instead. Returns the copy of the store the `else` holds.
ir::Op* guard_store(ir::Op& op) {
  ir::Builder b(op.parent, op.parent->find(&op));
  b.loc = op.loc;
  const size_t r = op.attr_ints("block").size();
  Value* zero = b.constant_int(ir::scalar_type(DType::i32), 0);
  Value* all = nullptr;
  for (size_t d = 0; d < r; ++d) {
    Value* ok = b.create1(OpKind::Cmp, {op.operands[1 + 2 * r + d], zero}, ir::scalar_type(DType::i1),
                          {{"pred", std::string("ge")}});
    all = all ? b.create1(OpKind::And, {all, ok}, ir::scalar_type(DType::i1)) : ok;
  }
  ir::Op* branch = b.create(OpKind::If, {all}, {});
  ir::Op* masked = nullptr;
  for (int side = 0; side < 2; ++side) {
    ir::Builder in(branch->add_region());
    in.loc = op.loc;
    std::unordered_map<const Value*, Value*> same;
    ir::Op* copy = in.region()->append(ir::clone_op(op, same));
    if (side == 1) masked = copy;
    in.create(OpKind::Yield, {}, {});
  }
  op.parent->erase(&op);
  return masked;
}

}  // namespace

bool lower_descriptors(ir::Function& fn, const std::function<bool(const ir::Op&)>& keep) {
  std::vector<ir::Op*> found;  // to lower; kept stores are guarded first
  std::vector<bool> guard;
  ir::walk(fn.body, [&](ir::Op* op) {
    if (op->kind != OpKind::DescriptorLoad && op->kind != OpKind::DescriptorStore) return;
    bool kept = keep && keep(*op);
    if (kept && op->kind == OpKind::DescriptorLoad) return;
    found.push_back(op);
    guard.push_back(kept);
  });
  bool changed = false;
  for (size_t i = 0; i < found.size(); ++i) {
    ir::Op* op = guard[i] ? guard_store(*found[i]) : found[i];
    Lowering l(*op);
    l.run();
    if (l.replaced()) ir::replace_uses(fn.body, op->result(), l.replaced());
    op->parent->erase(op);
    changed = true;
  }
  return changed;
}

}  // namespace tl::transforms
