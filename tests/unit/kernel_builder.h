// Test helper: builds kernels by hand with ir::Builder (no front end), wraps
// them in a tl::Kernel, and runs them on the interp device. Used by the
// interpreter and runtime tests.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "runtime/kernel.h"
#include "tiledsl/runtime.h"

namespace kb {

using tl::DType;
using tl::ir::OpKind;
using tl::ir::Type;
using tl::ir::Value;

inline Type S(DType d) { return tl::ir::scalar_type(d); }
inline Type P(DType d) { return tl::ir::ptr_type(d); }
inline Type T(DType d, std::vector<int64_t> shape) { return tl::ir::tile_type(d, std::move(shape)); }

class KernelBuilder {
 public:
  KernelBuilder(std::string name, std::vector<Type> params) {
    impl_ = std::make_shared<tl::detail::KernelImpl>();
    impl_->name = name;
    impl_->options.name = name;
    impl_->module = std::make_unique<tl::ir::Module>();
    auto fn = std::make_unique<tl::ir::Function>();
    fn->name = name;
    for (auto& p : params) fn->body.add_arg(p);
    impl_->params = params;
    impl_->fn = fn.get();
    impl_->module->functions.push_back(std::move(fn));
    b.set_insertion_end(&impl_->fn->body);
    at(1);
  }

  tl::ir::Builder b;

  // Sets the source line attached to the ops created next.
  KernelBuilder& at(int line) {
    b.loc = tl::ir::Loc{"test.cpp", line};
    return *this;
  }
  Value* arg(int i) { return impl_->fn->body.args.at(size_t(i)).get(); }
  tl::ir::Function& fn() { return *impl_->fn; }

  Value* op(OpKind k, std::vector<Value*> operands, Type result, tl::ir::Attrs attrs = {}) {
    return b.create1(k, std::move(operands), std::move(result), std::move(attrs));
  }
  void op0(OpKind k, std::vector<Value*> operands, tl::ir::Attrs attrs = {}) {
    b.create(k, std::move(operands), {}, std::move(attrs));
  }
  Value* ci(Type t, int64_t v) { return b.constant_int(std::move(t), v); }
  Value* cf(Type t, double v) { return b.constant_float(std::move(t), v); }
  Value* arange(int64_t n, int64_t start = 0) {
    return op(OpKind::Arange, {}, T(DType::i32, {n}), {{"start", start}, {"end", start + n}});
  }
  Value* splat(Value* v, std::vector<int64_t> shape) { return op(OpKind::Splat, {v}, v->type.with_shape(shape)); }
  // base (scalar pointer) + offs (tile of ints) -> tile of pointers.
  Value* ptrs(Value* base, Value* offs) {
    Value* bases = offs->type.is_tile() ? splat(base, offs->type.shape) : base;
    return op(OpKind::AddPtr, {bases, offs}, bases->type);
  }
  Value* load(Value* p, Value* mask = nullptr, Value* other = nullptr) {
    std::vector<Value*> ops{p};
    if (mask) ops.push_back(mask);
    if (other) ops.push_back(other);
    return op(OpKind::Load, ops, Type{p->type.dtype, false, p->type.shape});
  }
  void store(Value* p, Value* v, Value* mask = nullptr) {
    std::vector<Value*> ops{p, v};
    if (mask) ops.push_back(mask);
    op0(OpKind::Store, ops);
  }
  Value* cmp(const char* pred, Value* a, Value* c) {
    return op(OpKind::Cmp, {a, c}, a->type.with_dtype(DType::i1), {{"pred", std::string(pred)}});
  }
  // A for loop; body(iv, carried) returns the yielded values.
  std::vector<Value*> for_loop(Value* lo, Value* hi, Value* step, std::vector<Value*> init,
                               const std::function<std::vector<Value*>(Value*, std::vector<Value*>)>& body) {
    std::vector<Type> types;
    for (auto* v : init) types.push_back(v->type);
    std::vector<Value*> operands{lo, hi, step};
    operands.insert(operands.end(), init.begin(), init.end());
    tl::ir::Op* f = b.create(OpKind::For, operands, types);
    tl::ir::Region* r = f->add_region();
    Value* iv = r->add_arg(lo->type);
    std::vector<Value*> carried;
    for (auto& t : types) carried.push_back(r->add_arg(t));
    in_region(r, [&] { op0(OpKind::Yield, body(iv, carried)); });
    std::vector<Value*> results;
    for (auto& res : f->results) results.push_back(res.get());
    return results;
  }
  std::vector<Value*> if_(Value* cond, std::vector<Type> types, const std::function<std::vector<Value*>()>& then_fn,
                          const std::function<std::vector<Value*>()>& else_fn) {
    tl::ir::Op* f = b.create(OpKind::If, {cond}, types);
    in_region(f->add_region(), [&] { op0(OpKind::Yield, then_fn()); });
    in_region(f->add_region(), [&] { op0(OpKind::Yield, else_fn()); });
    std::vector<Value*> results;
    for (auto& res : f->results) results.push_back(res.get());
    return results;
  }
  // reduce or scan over `operands` along `axis`; combine(lhs, rhs) yields.
  std::vector<Value*> combine_op(OpKind k, std::vector<Value*> operands, int64_t axis, tl::ir::Attrs attrs,
                                 const std::function<std::vector<Value*>(std::vector<Value*>, std::vector<Value*>)>& combine) {
    std::vector<Type> types;
    for (auto* v : operands) {
      if (k == OpKind::Scan) {
        types.push_back(v->type);
      } else {
        auto shape = v->type.shape;
        shape.erase(shape.begin() + axis);
        types.push_back(v->type.with_shape(shape));
      }
    }
    attrs["axis"] = axis;
    tl::ir::Op* r = b.create(k, operands, types, attrs);
    tl::ir::Region* region = r->add_region();
    std::vector<Value*> lhs, rhs;
    for (auto* v : operands) lhs.push_back(region->add_arg(v->type.scalar()));
    for (auto* v : operands) rhs.push_back(region->add_arg(v->type.scalar()));
    in_region(region, [&] { op0(OpKind::Yield, combine(lhs, rhs)); });
    std::vector<Value*> results;
    for (auto& res : r->results) results.push_back(res.get());
    return results;
  }

  tl::Kernel kernel() const { return tl::Kernel(impl_); }
  const std::shared_ptr<tl::detail::KernelImpl>& impl() const { return impl_; }

 private:
  void in_region(tl::ir::Region* r, const std::function<void()>& fill) {
    tl::ir::Builder saved = b;
    b = tl::ir::Builder(r);
    b.loc = saved.loc;
    fill();
    b = saved;
  }
  std::shared_ptr<tl::detail::KernelImpl> impl_;
};

}  // namespace kb
