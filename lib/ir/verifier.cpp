// Tile IR verifier: the structural and type rules of ops.def, checked before
// and after every pass so a broken transformation is caught where it happens
// rather than as a wrong number in the interpreter.
//
// Every failure is a tl::Error "<file>:<line>: '<op>' expects <expected>,
// found <found>", naming the user's source line the op was traced from.
//
// Order of checks for one op: operands exist and dominate the op, every type
// the op defines is well formed (rank 1..5, dims c x 2^k, c odd <= 15), then the
// op-specific rules, then its regions (recursively, with the op's enclosing
// values visible). Regions may nest kMaxRegionDepth deep (ir.h), which
// bounds this recursion.
//
// GPU IR (a function with attributes {num_warps, warp_size, num_ctas}) is
// checked by the same rules (its own in verifier_gpu.cpp), with layouts ignored where the Tile IR's rules
// compare types, and further: operands are in the layouts their ops need
// where that does not depend on the target (gpu_layouts); each layout of the table has as many lanes
// and warps as the attributes say, and at most as many CTAs; every tile and
// buffer type names a layout whose outputs are its dimensions; the GPU IR's
// own ops (buffers, async copies, waits, barriers) appear only there.
#include "ir/verifier.h"

#include <algorithm>
#include <unordered_set>

#include "ir/verifier_rules.h"

namespace tl::ir {

namespace {

using namespace verify_rules;

class Verifier : public Rules {
 public:
  void function(const Function& fn) {
    fn_ = &fn;
    if (fn.is_gpu()) GpuRules(fn).function();
    else if (!fn.layouts.empty() || !fn.attrs.empty())
      throw Error(fn.loc.str() + ": 'func @" + fn.name + "' expects a layout table and attributes only in GPU IR " +
                  "(attributes {num_warps, warp_size, num_ctas}), found them without 'num_warps'");
    for (const auto& a : fn.body.args) {
      check_type_at(fn.loc, "func @" + fn.name, a->type, "argument");
      visible_.insert(a.get());
    }
    region(fn.body, 0);
    if (fn.is_gpu()) GpuRules(fn).tokens_and_waits();
  }

 private:
  void check_type_at(const Loc& loc, const std::string& what, const Type& t, const std::string& role) const {
    std::string problem;
    if (t.rank() > max_tile_rank) problem = "rank " + std::to_string(t.rank());
    // A buffer's leading dimension may count slots, any number of them
    // (GpuRules::type checks its layout covers the rest).
    for (size_t i = t.is_shared() && t.rank() > 1 ? 1 : 0; i < t.shape.size(); ++i)
      if (problem.empty() && !is_tile_dim(t.shape[i])) problem = "dimension " + std::to_string(t.shape[i]);
    if (problem.empty() && t.is_shared() && !t.shape.empty() && t.shape[0] < 1) problem = "dimension " + std::to_string(t.shape[0]);
    if (problem.empty() && exceeds_max_tile(t))
      throw Error(loc.str() + ": '" + what + "' expects " + role + " of at most " + std::to_string(max_tile_elements) +
                  " elements (tl::max_tile_elements), found " + t.str());
    if (!problem.empty())
      throw Error(loc.str() + ": '" + what + "' expects " + role +
                  " of rank 0.." + std::to_string(max_tile_rank) + " with dims c x 2^k (c = 1, 3, ..., 15), found " + problem + " in " + t.str());
    GpuRules(*fn_).type(loc, what, t, role);
  }
  void check_type(const Op& op, const Type& t, const std::string& role) const {
    check_type_at(op.loc, std::string(op.name()), t, role);
  }

  // ---- regions and dominance ----------------------------------------------
  // `depth`: how deep `r` is nested (a function body is 0).
  void region(const Region& r, int depth) {
    std::vector<const Value*> defined;  // removed from visible_ on exit
    for (const auto& a : r.args) {
      visible_.insert(a.get());
      defined.push_back(a.get());
    }
    for (auto it = r.ops.begin(); it != r.ops.end(); ++it) {
      const Op& op = **it;
      if (op.parent != &r) fail(op, "its parent pointer to be its region", "another region");
      for (size_t i = 0; i < op.operands.size(); ++i) {
        const Value* v = op.operands[i];
        if (!v) fail(op, "operand #" + std::to_string(i) + " to be a value", "null");
        if (!visible_.count(v))
          fail(op, "operand #" + std::to_string(i) + " to be defined before its use (in this region or an enclosing one)",
               "a value of type " + v->type.str() + " that does not dominate it");
      }
      if (op_is_terminator(op.kind) && std::next(it) != r.ops.end())
        fail(op, "to be the last op of its region", "ops after it");
      for (const auto& res : op.results) {
        if (res->def != &op) fail(op, "its results to point back to it", "a foreign result");
        check_type(op, res->type, "result");
      }
      for (const auto& sub : op.regions) {
        if (sub->parent != &op) fail(op, "its regions to point back to it", "a foreign region");
        for (const auto& a : sub->args) check_type(op, a->type, "region argument");
        // A misplaced yield is the real error, not the region's missing end.
        for (const auto& inner : sub->ops)
          if (op_is_terminator(inner->kind) && inner != sub->ops.back())
            fail(*inner, "to be the last op of its region", "ops after it");
      }
      check_op(op);
      if (fn_->is_gpu()) GpuRules(*fn_).layouts(op), GpuRules(*fn_).schedule(op);
      // IR built through the API (not parsed or traced) meets the limit
      // here, before the recursion below could exhaust the stack.
      if (!op.regions.empty() && depth + 1 > kMaxRegionDepth)
        fail(op, "regions nested at most " + std::to_string(kMaxRegionDepth) + " deep",
             "a region at depth " + std::to_string(depth + 1));
      for (const auto& sub : op.regions) region(*sub, depth + 1);
      for (const auto& res : op.results) {
        visible_.insert(res.get());
        defined.push_back(res.get());
      }
    }
    for (auto* v : defined) visible_.erase(v);
  }

  // A region ending in `yield` whose operand types are `want`.
  void yields(const Op& op, const Region& r, const std::vector<Type>& want, const std::string& which) const {
    const Op* term = r.ops.empty() ? nullptr : r.ops.back().get();
    require(term && term->kind == OpKind::Yield, op, which + " region to end in yield",
            term ? "'" + std::string(term->name()) + "'" : "an empty region");
    std::vector<Type> got;
    for (auto* v : term->operands)
      if (v) got.push_back(v->type);
    require(same_types(got, want), op, which + " region to yield " + types_str(want), types_str(got));
  }

  // ---- per-op rules --------------------------------------------------------
  void check_op(const Op& op) {
    size_t want_regions = (op.kind == OpKind::If || op.kind == OpKind::While) ? 2
                          : (op.kind == OpKind::For || op.kind == OpKind::Reduce || op.kind == OpKind::Scan) ? 1
                                                                                                              : 0;
    if (op.kind != OpKind::WarpSpecialize) regions(op, want_regions);  // one a partition (GpuRules)

    switch (op.kind) {
      case OpKind::Constant: {
        operands(op, 0, 0);
        results(op, 1);
        auto it = op.attrs.find("value");
        require(it != op.attrs.end(), op, "attribute 'value'", "none");
        require(!res(op).is_ptr, op, "a numeric result type", res(op).str());
        if (std::holds_alternative<double>(it->second))
          require(is_float(res(op).dtype), op, "an integer 'value' for " + res(op).str(), "a float");
        else
          require(std::holds_alternative<int64_t>(it->second), op, "an integer or float 'value'", "another kind");
        break;
      }
      case OpKind::ProgramId:
      case OpKind::NumPrograms: {
        operands(op, 0, 0);
        results(op, 1);
        int64_t axis = int_attr(op, "axis");
        require(axis >= 0 && axis <= 2, op, "'axis' in 0..2", std::to_string(axis));
        same_type(op, scalar_type(DType::i32), res(op), "a result");
        break;
      }
      case OpKind::Arange: {
        operands(op, 0, 0);
        results(op, 1);
        int64_t start = int_attr(op, "start"), end = int_attr(op, "end");
        require(end > start, op, "'end' > 'start'", std::to_string(start) + ".." + std::to_string(end));
        same_type(op, tile_type(DType::i32, {end - start}), res(op), "a result");
        break;
      }
      case OpKind::Splat: {
        operands(op, 1, 1);
        results(op, 1);
        require(opnd(op, 0).is_scalar(), op, "a scalar operand", opnd(op, 0).str());
        require(res(op).is_tile(), op, "a tile result", res(op).str());
        same_type(op, opnd(op, 0).with_shape(res(op).shape), res(op), "a result");
        break;
      }
      case OpKind::Broadcast: {
        operands(op, 1, 1);
        results(op, 1);
        const Type &in = opnd(op, 0), &out = res(op);
        require(in.is_tile() && in.rank() == out.rank(), op, "operand and result of one rank",
                in.str() + " -> " + out.str());
        same_type(op, in.with_shape(out.shape), out, "a result");
        for (int i = 0; i < in.rank(); ++i)
          require(in.shape[i] == out.shape[i] || in.shape[i] == 1, op,
                  "dim " + std::to_string(i) + " to be 1 or " + std::to_string(out.shape[i]),
                  in.str() + " -> " + out.str());
        break;
      }
      case OpKind::ExpandDims: {
        operands(op, 1, 1);
        results(op, 1);
        const Type& in = opnd(op, 0);
        int64_t axis = int_attr(op, "axis");
        require(axis >= 0 && axis <= in.rank(), op, "'axis' in 0.." + std::to_string(in.rank()), std::to_string(axis));
        auto shape = in.shape;
        shape.insert(shape.begin() + axis, 1);
        same_type(op, in.with_shape(shape), res(op), "a result");
        break;
      }
      case OpKind::Reshape: {
        operands(op, 1, 1);
        results(op, 1);
        const Type &in = opnd(op, 0), &out = res(op);
        require(in.dtype == out.dtype && in.is_ptr == out.is_ptr, op, "result element " + elem_str(in), elem_str(out));
        require(in.numel() == out.numel(), op, "a result of " + std::to_string(in.numel()) + " elements",
                out.str());
        break;
      }
      case OpKind::Trans: {
        operands(op, 1, 1);
        results(op, 1);
        const Type& in = opnd(op, 0);
        const auto& order = ints_attr(op, "order");
        std::vector<int64_t> sorted = order;
        std::sort(sorted.begin(), sorted.end());
        bool perm = int(order.size()) == in.rank();
        for (size_t i = 0; perm && i < sorted.size(); ++i) perm = sorted[i] == int64_t(i);
        require(perm, op, "'order' to be a permutation of the operand's " + std::to_string(in.rank()) + " dims",
                shape_str(order));
        // A buffer's trans is a view of it (GPU IR: a dot reads it so).
        Type want = in;
        want.shape.clear();
        for (auto d : order) want.shape.push_back(in.shape[d]);
        same_type(op, want, res(op), "a result");
        break;
      }
      case OpKind::Join: {
        operands(op, 2, 2);
        results(op, 1);
        same_type(op, opnd(op, 0), opnd(op, 1), "a second operand");
        auto shape = opnd(op, 0).shape;
        shape.push_back(2);
        same_type(op, opnd(op, 0).with_shape(shape), res(op), "a result");
        break;
      }
      case OpKind::Split: {
        operands(op, 1, 1);
        results(op, 2);
        const Type& in = opnd(op, 0);
        require(in.is_tile() && in.shape.back() == 2, op, "an operand whose minor dim is 2", in.str());
        auto shape = in.shape;
        shape.pop_back();
        same_type(op, in.with_shape(shape), res(op, 0), "a first result");
        same_type(op, in.with_shape(shape), res(op, 1), "a second result");
        break;
      }

      case OpKind::Add: case OpKind::Sub: case OpKind::Mul: case OpKind::Div: case OpKind::Rem:
      case OpKind::Minimum: case OpKind::Maximum:
        binary(op, false);
        break;
      case OpKind::And: case OpKind::Or: case OpKind::Xor: case OpKind::Shl: case OpKind::Shr: case OpKind::MulHi:
        binary(op, true);
        break;
      case OpKind::Cmp: {
        operands(op, 2, 2);
        results(op, 1);
        same_type(op, opnd(op, 0), opnd(op, 1), "a second operand");
        str_in(op, "pred", {"eq", "ne", "lt", "le", "gt", "ge"});
        same_type(op, tile_like(opnd(op, 0), DType::i1), res(op), "a result");
        break;
      }
      case OpKind::Select: {
        operands(op, 3, 3);
        results(op, 1);
        require(is_i1(opnd(op, 0)), op, "an i1 condition", opnd(op, 0).str());
        same_type(op, opnd(op, 1), opnd(op, 2), "a third operand");
        same_type(op, opnd(op, 1), res(op), "a result");
        same_shapes(op);
        break;
      }
      case OpKind::Fma: {
        operands(op, 3, 3);
        results(op, 1);
        require(is_float_elem(opnd(op, 0)), op, "float operands", opnd(op, 0).str());
        same_type(op, opnd(op, 0), opnd(op, 1), "a second operand");
        same_type(op, opnd(op, 0), opnd(op, 2), "a third operand");
        same_type(op, opnd(op, 0), res(op), "a result");
        break;
      }

      case OpKind::Neg: case OpKind::Abs:
        unary(op, is_numeric(opnd_or_fail(op)), "a numeric operand");
        break;
      case OpKind::Not:
        unary(op, is_int_elem(opnd_or_fail(op)), "an integer or i1 operand");
        break;
      case OpKind::Exp: case OpKind::Exp2: case OpKind::Log: case OpKind::Log2: case OpKind::Sqrt:
      case OpKind::Rsqrt: case OpKind::Sin: case OpKind::Cos: case OpKind::Tanh: case OpKind::Erf:
      case OpKind::Floor: case OpKind::Ceil:
        unary(op, is_float_elem(opnd_or_fail(op)), "a float operand");
        break;
      case OpKind::Cast: {
        operands(op, 1, 1);
        results(op, 1);
        require(!opnd(op, 0).is_ptr && !res(op).is_ptr, op, "numeric operand and result",
                opnd(op, 0).str() + " -> " + res(op).str());
        same_shapes(op);
        break;
      }
      case OpKind::Hint: {
        operands(op, 1, 1);
        results(op, 1);
        const Type& in = opnd(op, 0);
        require(in.is_ptr || (!is_float(in.dtype) && in.dtype != DType::i1), op, "an integer or pointer operand",
                in.str());
        same_type(op, in, res(op), "a result");
        require(op.has_attr("divisibility") || op.has_attr("contiguity"), op,
                "attribute 'divisibility' or 'contiguity'", "neither");
        size_t n = size_t(std::max(1, in.rank()));
        for (const char* key : {"divisibility", "contiguity"}) {
          if (!op.has_attr(key)) continue;
          const auto& v = ints_attr(op, key);
          require(v.size() == n, op, std::to_string(n) + " entries in '" + key + "' (one per dimension)",
                  std::to_string(v.size()));
          for (size_t d = 0; d < v.size(); ++d)
            require(v[d] >= 1 && is_pow2(v[d]) && (std::string(key) != "contiguity" || in.rank() == 0 ||
                                                   v[d] <= in.shape[d]),
                    op, std::string("'") + key + "' entries that are powers of two" +
                            (std::string(key) == "contiguity" ? " no larger than the dimension" : ""),
                    std::to_string(v[d]));
        }
        require(!op.has_attr("contiguity") || in.rank() > 0, op, "'contiguity' only on a tile", in.str());
        break;
      }
      case OpKind::Bitcast: {
        operands(op, 1, 1);
        results(op, 1);
        const Type &in = opnd(op, 0), &out = res(op);
        same_shapes(op);
        require(in.is_ptr == out.is_ptr || (in.is_ptr ? out.dtype : in.dtype) == DType::i64, op,
                "pointer to pointer, value to value, or pointer to and from i64", in.str() + " -> " + out.str());
        if (!in.is_ptr && !out.is_ptr)
          require(bit_width(in.dtype) == bit_width(out.dtype), op,
                  "a result of the operand's bit width " + std::to_string(bit_width(in.dtype)), out.str());
        break;
      }
      case OpKind::AddPtr: {
        operands(op, 2, 2);
        results(op, 1);
        require(opnd(op, 0).is_ptr, op, "a pointer first operand", opnd(op, 0).str());
        require(is_int_elem(opnd(op, 1)) && opnd(op, 1).dtype != DType::i1, op, "an integer offset",
                opnd(op, 1).str());
        same_shapes(op);
        same_type(op, opnd(op, 0), res(op), "a result");
        break;
      }

      case OpKind::Reduce:
      case OpKind::Scan:
        reduce_or_scan(op);
        break;
      case OpKind::Dot:
        dot(op);
        break;

      case OpKind::Load: {
        operands(op, 1, 3);
        results(op, 1);
        const Type& ptr = opnd(op, 0);
        require(ptr.is_ptr, op, "a pointer operand", ptr.str());
        if (op.operands.size() > 1) same_type(op, tile_like(ptr, DType::i1), opnd(op, 1), "a mask");
        if (op.operands.size() > 2) same_type(op, pointee(ptr), opnd(op, 2), "an 'other' value");
        same_type(op, pointee(ptr), res(op), "a result");
        optional_str_in(op, "cache", {".ca", ".cg", ".cs", ".lu", ".cv"});
        optional_str_in(op, "evict", {"evict_first", "evict_last", "evict_normal"});
        optional_int(op, "volatile");
        break;
      }
      case OpKind::Store: {
        operands(op, 2, 3);
        results(op, 0);
        const Type& ptr = opnd(op, 0);
        require(ptr.is_ptr, op, "a pointer operand", ptr.str());
        same_type(op, pointee(ptr), opnd(op, 1), "a stored value");
        if (op.operands.size() > 2) same_type(op, tile_like(ptr, DType::i1), opnd(op, 2), "a mask");
        optional_str_in(op, "cache", {".wb", ".cg", ".cs", ".wt"});
        optional_str_in(op, "evict", {"evict_first", "evict_last", "evict_normal"});
        break;
      }
      case OpKind::DescriptorLoad:
      case OpKind::DescriptorStore: {
        bool store = op.kind == OpKind::DescriptorStore;
        const auto& block = ints_attr(op, "block");
        size_t r = block.size();
        require(r >= 1 && r <= 5, op, "a block of rank 1 to 5", shape_str(block));
        for (int64_t b : block) require(is_tile_dim(b), op, "block sizes c x 2^k (c = 1, 3, ..., 15)", shape_str(block));
        size_t n = 1 + 3 * r + (store ? 1 : 0);
        operands(op, n, n);
        results(op, store ? 0 : 1);
        const Type& base = opnd(op, 0);
        require(base.is_ptr && base.is_scalar(), op, "a scalar pointer base", base.str());
        for (size_t i = 1; i < 1 + 3 * r; ++i)
          same_type(op, scalar_type(DType::i32), opnd(op, int(i)),
                    std::string(i <= r ? "a size" : i <= 2 * r ? "a stride" : "a coordinate") + " (operand #" +
                        std::to_string(i) + ")");
        // The block, or (ops.def) its last two dimensions where the others are 1.
        Type value = Type{base.dtype, false, block};
        const Type& got = store ? opnd(op, int(n - 1)) : res(op);
        if (r > 2 && got.rank() == 2 && std::all_of(block.begin(), block.end() - 2, [](int64_t b) { return b == 1; }))
          value = value.with_shape({block[r - 2], block[r - 1]});
        same_type(op, value, got, store ? "a stored value" : "a result");
        break;
      }
      case OpKind::AtomicRmw: {
        operands(op, 2, 3);
        results(op, 1);
        const Type& ptr = opnd(op, 0);
        require(ptr.is_ptr, op, "a pointer operand", ptr.str());
        same_type(op, pointee(ptr), opnd(op, 1), "a value");
        if (op.operands.size() > 2) same_type(op, tile_like(ptr, DType::i1), opnd(op, 2), "a mask");
        same_type(op, pointee(ptr), res(op), "a result");
        str_in(op, "kind", {"add", "max", "min", "xchg", "and", "or", "xor"});
        atomic_sync(op);
        break;
      }
      case OpKind::AtomicCas: {
        operands(op, 3, 3);
        results(op, 1);
        const Type& ptr = opnd(op, 0);
        require(ptr.is_ptr, op, "a pointer operand", ptr.str());
        same_type(op, pointee(ptr), opnd(op, 1), "a compared value");
        same_type(op, pointee(ptr), opnd(op, 2), "a new value");
        same_type(op, pointee(ptr), res(op), "a result");
        atomic_sync(op);
        break;
      }

      case OpKind::InlineAsm: {
        operands_at_least(op, 1);
        require(!op.results.empty(), op, "at least one result", "none");
        for (size_t i = 1; i < op.results.size(); ++i)
          require(res(op, int(i)).shape == res(op).shape && !res(op, int(i)).is_ptr, op,
                  "result #" + std::to_string(i) + " a number of result #0's shape " + res(op).str(),
                  res(op, int(i)).str());
        for (size_t i = 0; i < op.operands.size(); ++i)
          require(op.operands[i]->type.shape == res(op).shape && !op.operands[i]->type.is_ptr, op,
                  "operand #" + std::to_string(i) + " a number of the result's shape " + res(op).str(),
                  op.operands[i]->type.str());
        require(op.has_attr("ptx") || op.has_attr("amdgcn"), op, "assembly text ('ptx' or 'amdgcn')", "none");
        for (const char* lang : {"ptx", "amdgcn"}) {
          optional_str(op, lang);
          if (op.has_attr(lang)) str_attr(op, std::string(lang) + "_constraints");
        }
        optional_int(op, "pure");
        int64_t pack = op.attr_int_or("pack", 1);
        require(pack >= 1 && pack <= 8 && (pack & (pack - 1)) == 0, op, "a pack of 1, 2, 4 or 8",
                std::to_string(pack));
        break;
      }
      case OpKind::Assume:
        operands(op, 1, 1);
        results(op, 0);
        require(is_i1(opnd(op, 0)), op, "an i1 condition", opnd(op, 0).str());
        break;
      case OpKind::Assert: {
        operands(op, 1, 1);
        results(op, 0);
        require(is_i1(opnd(op, 0)), op, "an i1 condition", opnd(op, 0).str());
        str_attr(op, "msg");
        optional_str(op, "file");
        optional_int(op, "line");
        break;
      }
      case OpKind::Print:
        results(op, 0);
        optional_str(op, "prefix");
        break;

      case OpKind::For:
        for_op(op);
        break;
      case OpKind::While:
        while_op(op);
        break;

      case OpKind::ConvertLayout:
      case OpKind::LocalAlloc:
      case OpKind::LocalSlot:
      case OpKind::LocalLoad:
      case OpKind::LocalStore:
      case OpKind::AsyncCopy:
      case OpKind::AsyncCommit:
      case OpKind::AsyncWait:
      case OpKind::DotWait:
      case OpKind::FenceAsyncShared:
      case OpKind::MbarrierInit:
      case OpKind::MbarrierInval:
      case OpKind::MbarrierExpectTx:
      case OpKind::MbarrierArrive:
      case OpKind::MbarrierWait:
      case OpKind::TensorMap:
      case OpKind::TmaLoad:
      case OpKind::TmaStore:
      case OpKind::TmaStoreWait:
      case OpKind::WarpSpecialize:
      case OpKind::NamedBarrier:
        GpuRules(*fn_).op(op);
        break;
      case OpKind::Barrier:  // Tile IR too: tl::debug_barrier
        operands(op, 0, 0);
        results(op, 0);
        break;
      case OpKind::If: {
        operands(op, 1, 1);
        require(opnd(op, 0) == scalar_type(DType::i1), op, "a scalar i1 condition", opnd(op, 0).str());
        for (int i = 0; i < 2; ++i) {
          const char* which = i == 0 ? "then" : "else";
          require(op.regions[i]->args.empty(), op, std::string(which) + " region without arguments",
                  std::to_string(op.regions[i]->args.size()) + " arguments");
          yields(op, *op.regions[i], result_types(op), which);
        }
        break;
      }
      case OpKind::Yield: {
        results(op, 0);
        const Region* r = op.parent;
        bool in_region_op = r && r->parent &&
                            (r->parent->kind == OpKind::For || r->parent->kind == OpKind::If || r->parent->kind == OpKind::While ||
                             r->parent->kind == OpKind::Reduce || r->parent->kind == OpKind::Scan ||
                             r->parent->kind == OpKind::WarpSpecialize);
        require(in_region_op, op, "to be inside a for, while, if, reduce, scan or warp_specialize region", "it at function level");
        break;
      }
    }
  }

  const Type& opnd_or_fail(const Op& op) const {
    operands(op, 1, 1);
    return opnd(op, 0);
  }

  // `t`'s shape with element `d`.

  void binary(const Op& op, bool integer_only) const {
    operands(op, 2, 2);
    results(op, 1);
    same_type(op, opnd(op, 0), opnd(op, 1), "a second operand");
    const Type& t = opnd(op, 0);
    if (integer_only)
      require(is_int_elem(t), op, "integer operands", t.str());
    else
      require(is_numeric(t), op, "numeric operands", t.str());
    same_type(op, t, res(op), "a result");
  }

  void unary(const Op& op, bool element_ok, const std::string& want) const {
    results(op, 1);
    require(element_ok, op, want, opnd(op, 0).str());
    same_type(op, opnd(op, 0), res(op), "a result");
  }

  void reduce_or_scan(const Op& op) const {
    operands_at_least(op, 1);
    size_t n = op.operands.size();
    results(op, n);
    const Type& first = opnd(op, 0);
    require(first.is_tile(), op, "tile operands", first.str());
    for (size_t i = 1; i < n; ++i)
      require(opnd(op, int(i)).shape == first.shape, op, "operands of one shape " + shape_str(first.shape),
              opnd(op, int(i)).str());
    int64_t axis = int_attr(op, "axis");
    require(axis >= 0 && axis < first.rank(), op, "'axis' in 0.." + std::to_string(first.rank() - 1),
            std::to_string(axis));
    if (op.kind == OpKind::Scan) optional_int(op, "reverse");

    // Combiner region ^(lhs..., rhs...) over scalars, yielding n scalars.
    const Region& body = *op.regions[0];
    std::vector<Type> elems, args;
    for (auto* v : op.operands) elems.push_back(v->type.scalar());
    for (int side = 0; side < 2; ++side) args.insert(args.end(), elems.begin(), elems.end());
    std::vector<Type> got;
    for (const auto& a : body.args) got.push_back(a->type);
    require(got == args, op, "combiner arguments " + types_str(args), types_str(got));
    yields(op, body, elems, "combiner");

    for (size_t i = 0; i < n; ++i) {
      const Type& in = opnd(op, int(i));
      Type want = in;
      if (op.kind == OpKind::Reduce) {
        auto shape = in.shape;
        shape.erase(shape.begin() + axis);
        want = in.with_shape(shape);
      }
      same_type(op, want, res(op, int(i)), "result #" + std::to_string(i));
    }
  }

  void dot(const Op& op) const {
    operands(op, 3, 3);
    results(op, 1);
    const Type &a = opnd(op, 0), &b = opnd(op, 1), &acc = opnd(op, 2);
    require(a.rank() == 2 && b.rank() == 2 && acc.rank() == 2, op, "rank-2 operands",
            a.str() + ", " + b.str() + ", " + acc.str());
    require(!a.is_ptr && !b.is_ptr && !acc.is_ptr, op, "numeric operands", a.str() + ", " + b.str());
    // GPU IR: A and B may be read from buffers (a pipeline's), C is a tile.
    require(!acc.is_shared(), op, "a tile accumulator", acc.str());
    require(a.shape[1] == b.shape[0] && acc.shape[0] == a.shape[0] && acc.shape[1] == b.shape[1], op,
            "[M, K] x [K, N] + [M, N]", shape_str(a.shape) + " x " + shape_str(b.shape) + " + " + shape_str(acc.shape));
    require(a.dtype == b.dtype, op, "inputs of one dtype", elem_str(a) + " and " + elem_str(b));
    if (is_float(a.dtype))
      require(is_float(acc.dtype), op, "a float accumulator for " + elem_str(a) + " inputs", acc.str());
    else
      require((a.dtype == DType::i8 || a.dtype == DType::u8) && acc.dtype == DType::i32, op,
              "float inputs, or i8 inputs with an i32 accumulator", elem_str(a) + " x " + elem_str(b) + " + " + acc.str());
    same_type(op, acc, res(op), "a result");
    if (op.has_attr("input_precision")) str_in(op, "input_precision", {"ieee", "tf32"});
    optional_str(op, "instr");  // GPU IR: the matrix instruction chosen
    optional_int(op, "async");  // GPU IR: issued without waiting (dot_wait waits)
    optional_str_in(op, "a_in", {"registers"});  // GPU IR: a warpgroup instruction's A from registers
    if (op.has_attr("a_in")) require(!a.is_shared(), op, "A in registers with a_in = \"registers\"", a.str());
  }

  void for_op(const Op& op) const {
    operands_at_least(op, 3);
    const Type& lo = opnd(op, 0);
    require(lo.is_scalar() && is_int_elem(lo) && lo.dtype != DType::i1, op, "an integer scalar lower bound",
            lo.str());
    same_type(op, lo, opnd(op, 1), "an upper bound");
    same_type(op, lo, opnd(op, 2), "a step");
    std::vector<Type> carried;
    for (size_t i = 3; i < op.operands.size(); ++i) carried.push_back(op.operands[i]->type);
    require(same_types(result_types(op), carried), op, "results typed as the initial values " + types_str(carried),
            types_str(result_types(op)));
    std::vector<Type> args{lo};
    args.insert(args.end(), carried.begin(), carried.end());
    const Region& body = *op.regions[0];
    std::vector<Type> got;
    for (const auto& a : body.args) got.push_back(a->type);
    require(same_types(got, args), op, "body arguments (induction variable, carried...) " + types_str(args), types_str(got));
    yields(op, body, carried, "body");
    optional_int(op, "num_stages");
    optional_int(op, "warp_specialize");
    optional_int(op, "peel_last");
    optional_int(op, "peeled");
  }

  void while_op(const Op& op) const {
    std::vector<Type> carried;
    for (const Value* v : op.operands) carried.push_back(v->type);
    require(same_types(result_types(op), carried), op, "results typed as the initial values " + types_str(carried),
            types_str(result_types(op)));
    const char* which[2] = {"condition", "body"};
    for (int i = 0; i < 2; ++i) {
      std::vector<Type> got;
      for (const auto& a : op.regions[i]->args) got.push_back(a->type);
      require(same_types(got, carried), op, std::string(which[i]) + " arguments (the carried values) " + types_str(carried),
              types_str(got));
    }
    yields(op, *op.regions[0], {scalar_type(DType::i1)}, which[0]);
    yields(op, *op.regions[1], carried, which[1]);
  }

  std::unordered_set<const Value*> visible_;
  const Function* fn_ = nullptr;
};

}  // namespace

void verify(const Function& fn) { Verifier().function(fn); }

void verify(const Module& m) {
  for (const auto& f : m.functions) verify(*f);
}

}  // namespace tl::ir
