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
#include "transforms/passes.h"

namespace tl::transforms {

namespace {

using ir::OpKind;
using ir::Type;
using ir::Value;

class Lowering {
 public:
  explicit Lowering(ir::Op& op) : op_(op), b_(op.parent, op.parent->find(&op)), block_(op.attr_ints("block")) {
    b_.loc = op.loc;
  }

  // The block's addresses and which of them lie inside the tensor.
  std::pair<Value*, Value*> addresses() {
    const size_t r = block_.size();
    Value* base = op_.operands[0];
    Value *ptrs = nullptr, *ok = nullptr;
    std::vector<int64_t> grown(r, 1);  // the shape after dimensions 0..d
    for (size_t d = 0; d < r; ++d) {
      Value* size = op_.operands[1 + d];
      Value* stride = op_.operands[1 + r + d];
      Value* coord = op_.operands[1 + 2 * r + d];
      Type line = ir::tile_type(DType::i32, {block_[d]});
      Value* offs = b_.create1(OpKind::Arange, {}, line, {{"start", int64_t(0)}, {"end", block_[d]}});
      offs = b_.create1(OpKind::Add, {offs, splat(coord, line.shape)}, line);
      std::vector<int64_t> shape = {block_[d]};
      for (size_t a = 0; a < r; ++a)
        if (a != d) {
          shape.insert(shape.begin() + long(a), 1);
          offs = b_.create1(OpKind::ExpandDims, {offs}, line.with_shape(shape), {{"axis", int64_t(a)}});
        }
      Value* unsigned_offs = b_.create1(OpKind::Cast, {offs}, ir::tile_type(DType::u32, shape));
      Value* unsigned_size = b_.create1(OpKind::Cast, {size}, ir::scalar_type(DType::u32));
      Value* in = b_.create1(OpKind::Cmp, {unsigned_offs, splat(unsigned_size, shape)},
                             ir::tile_type(DType::i1, shape), {{"pred", std::string("lt")}});
      Value* step = b_.create1(OpKind::Mul, {offs, splat(stride, shape)}, line.with_shape(shape));
      grown[d] = block_[d];
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
    if (op_.kind == OpKind::DescriptorLoad) {
      Type t = op_.result()->type;
      ir::Attr zero = is_float(t.dtype) ? ir::Attr(0.0) : ir::Attr(int64_t(0));
      Value* other = b_.create1(OpKind::Constant, {}, t, {{"value", zero}});
      replaced_ = b_.create1(OpKind::Load, {ptrs, ok, other}, t);
    } else {
      b_.create(OpKind::Store, {ptrs, op_.operands.back(), ok}, {});
    }
  }
  Value* replaced() const { return replaced_; }

 private:
  Value* splat(Value* scalar, const std::vector<int64_t>& shape) {
    return b_.create1(OpKind::Splat, {scalar}, scalar->type.with_shape(shape));
  }
  Value* broadcast(Value* v, const std::vector<int64_t>& shape) {
    return v->type.shape == shape ? v : b_.create1(OpKind::Broadcast, {v}, v->type.with_shape(shape));
  }

  ir::Op& op_;
  ir::Builder b_;
  std::vector<int64_t> block_;
  Value* replaced_ = nullptr;
};

}  // namespace

bool lower_descriptors(ir::Function& fn, const std::function<bool(const ir::Op&)>& keep) {
  std::vector<ir::Op*> found;
  ir::walk(fn.body, [&](ir::Op* op) {
    if ((op->kind == OpKind::DescriptorLoad || op->kind == OpKind::DescriptorStore) && !(keep && keep(*op)))
      found.push_back(op);
  });
  for (ir::Op* op : found) {
    Lowering l(*op);
    l.run();
    if (l.replaced()) ir::replace_uses(fn.body, op->result(), l.replaced());
    op->parent->erase(op);
  }
  return !found.empty();
}

}  // namespace tl::transforms
