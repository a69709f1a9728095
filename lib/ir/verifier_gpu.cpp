// GPU IR verifier rules (see verifier.h, verifier_rules.h): the launch
// attributes and the layout table of a GPU IR function, the layouts on its
// types, the target-independent rules of which layout an operand is in,
// and the GPU IR's own ops (buffers, async copies and waits, barriers,
// conversions).
#include <algorithm>
#include <set>
#include <string>
#include <unordered_set>

#include "ir/verifier.h"
#include "ir/verifier_rules.h"

namespace tl::ir::verify_rules {

// ---- the GPU IR: launch shape and layouts --------------------------------
void GpuRules::function() const {
  const Function& fn = fn_;
  std::string what = "'func @" + fn.name + "' expects ";
  // Warps may also be 12 or 24 (warpgroups in threes): layouts then repeat
  // their warps (linear_layout.h).
  for (const char* key : {"num_warps", "warp_size", "num_ctas"}) {
    auto it = fn.attrs.find(key);
    bool warps = std::string(key) == "num_warps";
    auto ok = [&](int64_t v) { return is_pow2(v) || (warps && v % 12 == 0 && is_pow2(v / 12)); };
    if (it == fn.attrs.end() || !std::holds_alternative<int64_t>(it->second) || !ok(std::get<int64_t>(it->second)))
      throw Error(fn.loc.str() + ": " + what + "attribute '" + key + "' to be a power of two" +
                  (warps ? " or 12 times one" : "") + ", found " +
                  (it == fn.attrs.end() ? std::string("none") : "another value"));
  }
  // The kernel options the lowering reads, when recorded.
  auto option = [&](const char* key, int64_t lo, int64_t hi, const std::string& want) {
    auto it = fn.attrs.find(key);
    if (it != fn.attrs.end() && !(std::holds_alternative<int64_t>(it->second) &&
                                  std::get<int64_t>(it->second) >= lo && std::get<int64_t>(it->second) <= hi))
      throw Error(fn.loc.str() + ": " + what + "attribute '" + key + "' to be " + want + ", found another value");
  };
  option("num_stages", 1, int64_t(1) << 30, "an integer of at least 1");
  option("fp_fusion", 0, 1, "0 or 1");
  option("flush_denormals", 0, 1, "0 or 1");
  option("programs_per_sm", 1, 8, "1 to 8");
  for (size_t i = 0; i < fn.layouts.size(); ++i) {
    const LinearLayout& l = fn.layouts[i];
    std::string name = "#l" + std::to_string(i + 1);
    for (const auto& d : l.in_dims()) {
      if (d.bases.size() > 30)
        throw Error(fn.loc.str() + ": " + what + "layout " + name + " to have at most 30 bits of '" + d.name +
                    "', found " + std::to_string(d.bases.size()));
      // The algebra has repeats of any input (linear_layout.h); the GPU
      // passes lower those of registers (tiles whose dims are not powers of
      // two), warps (num_warps 12) and buffers' offsets (swizzled_tile.h).
      if (d.repeat > 1 && d.name != kReg && d.name != kWarp && d.name != kOffset)
        throw Error(fn.loc.str() + ": " + what + "layout " + name + " to have no repeat of '" + d.name +
                    "' (only registers, warps and offsets repeat, so far), found " + l.str());
      std::string want = d.name == kLane ? "warp_size" : d.name == kWarp ? "num_warps" : d.name == kBlock ? "num_ctas" : "";
      if (want.empty() && d.name != kReg && d.name != kOffset)
        throw Error(fn.loc.str() + ": " + what + "layout " + name + " to have inputs among register, lane, warp, " +
                    "block and offset, found '" + d.name + "'");
      // A layout may name fewer CTAs than the cluster has: every CTA of
      // the rest holds the same part (as a zero basis would say).
      if (want.empty()) continue;
      int64_t have = l.in_size(d.name), need = std::get<int64_t>(fn.attrs.at(want));
      if (d.name == kBlock ? have > need : have != need)
        throw Error(fn.loc.str() + ": " + what + "layout " + name + " to have " + (d.name == kBlock ? "at most " : "") +
                    std::to_string(need) + " " + d.name + "s (" + want + "), found " + std::to_string(have));
    }
  }
}

// A type's layout: in GPU IR every tile and buffer has one, whose outputs
// are its dimensions (dim0:size0 ...); scalars and tokens have none, and
// the Tile IR has no layouts, buffers or tokens at all.
void GpuRules::type(const Loc& loc, const std::string& what, const Type& t, const std::string& role) const {
  auto bad = [&](const std::string& expected) {
    throw Error(loc.str() + ": '" + what + "' expects " + role + " " + expected + ", found " + t.str());
  };
  if (!fn_.is_gpu()) {
    if (!t.is_scalar() && !t.is_tile()) bad("of a tile or scalar type (buffers and tokens are GPU IR)");
    if (t.layout) bad("without a layout (Tile IR)");
    return;
  }
  if (t.is_scalar() || t.is_token()) {
    if (t.layout) bad(std::string("without a layout (a ") + (t.is_token() ? "token)" : "scalar)"));
    return;
  }
  if (!t.layout) bad("with a layout (GPU IR)");
  if (t.layout < 0 || size_t(t.layout) > fn_.layouts.size())
    bad("with a layout of the function's table (#l1 to #l" + std::to_string(fn_.layouts.size()) + ")");
  const LinearLayout& l = fn_.layout_of(t);
  // A tile's layout maps threads' registers; a buffer's, element offsets,
  // and may leave out a leading dimension that counts slots.
  int lead = t.rank() - int(l.out_dims().size());
  bool ok = lead == 0 || (lead == 1 && t.is_shared());
  for (const auto& d : l.in_dims())
    if (t.is_shared() ? d.name != kOffset && d.name != kBlock : d.name == kOffset) ok = false;
  for (int d = 0; ok && d + lead < t.rank(); ++d)
    ok = l.out_dims()[size_t(d)].name == dim_name(d) && l.out_dims()[size_t(d)].size == t.shape[size_t(d + lead)];
  if (!ok) bad("whose layout covers its shape (#l" + std::to_string(t.layout) + " is " + l.str() + ")");
}

// ---- GPU IR: operands in the layouts of their ops -------------------------
// Target-independent rules only (a broadcast's or a dot's operand layouts
// follow from the target's choices, which the GPU passes check): an
// elementwise op's or a load's tile operands are in its result's layout, a
// store's or an atomic's in its address's, a loop's initial values,
// results and yields in its carried layouts, an if's yields in its
// results'.
void GpuRules::same_layout(const Op& op, const Value* v, int32_t want, const std::string& what) const {
  if (v->type.is_tile() && v->type.layout != want)
    fail(op, what + " in layout #l" + std::to_string(want), v->type.str());
}
void GpuRules::layouts(const Op& op) const {
  std::string whose;
  const Value* like = nullptr;
  if ((op_is_elementwise(op.kind) || op.kind == OpKind::Load) && !op.results.empty() && res(op).is_tile())
    like = op.result(), whose = "its result's";
  else if ((op.kind == OpKind::Store || op.kind == OpKind::AtomicRmw || op.kind == OpKind::AtomicCas) &&
           opnd(op, 0).is_tile())
    like = op.operands[0], whose = "its address's";
  if (like)
    for (size_t i = 0; i < op.operands.size(); ++i)
      same_layout(op, op.operands[i], like->type.layout, "operand #" + std::to_string(i) + " (" + whose + " layout)");
  if (ir::is_loop(op) && op.operands.size() >= ir::carried_init_index(op))
    for (size_t k = 0; k < op.results.size() && k + ir::carried_init_index(op) < op.operands.size(); ++k) {
      std::vector<Value*> args = ir::carried_args(op, k);
      if (args.empty()) continue;
      int32_t l = args.front()->type.layout;
      std::string n = "carried value #" + std::to_string(k);
      same_layout(op, op.operands[ir::carried_init_index(op) + k], l, "the initial " + n);
      same_layout(op, op.result(int(k)), l, "the result of " + n);
      for (const Value* arg : args) same_layout(op, arg, l, "the region argument of " + n);
      if (const Value* y = ir::carried_yield(op, k)) same_layout(op, y, l, "the yielded " + n);
    }
  if (op.kind == OpKind::If)
    for (const auto& sub : op.regions)
      if (const Op* y = sub->terminator())
        for (size_t k = 0; k < y->operands.size() && k < op.results.size(); ++k)
          same_layout(op, y->operands[k], op.result(int(k))->type.layout, "yield #" + std::to_string(k) + " (its result's layout)");
}

// ---- a loop schedule and shared-memory placement -----------------------------
// Their shape only: whether the rules allow the forms is checked where the
// lowering rebuilds the pipeline (scheduled_pipeline).
void GpuRules::schedule(const Op& op) const {
  if (op.has_attr("stages")) {
    require(op.kind == OpKind::For, op, "no 'stages' (a loop's pipeline depth)", "one on '" + std::string(op.name()) + "'");
    require(int_attr(op, "stages") >= 2, op, "'stages' of at least 2", std::to_string(int_attr(op, "stages")));
  }
  if (op.has_attr("pipeline")) {
    require(op.kind == OpKind::Load || op.kind == OpKind::DescriptorLoad, op, "no 'pipeline' (a load's pipeline form)",
            "one on '" + std::string(op.name()) + "'");
    str_in(op, "pipeline", {"dots", "registers", "once", "prefetch"});
    const Op* loop = op.parent ? op.parent->parent : nullptr;
    require(loop && loop->kind == OpKind::For && loop->has_attr("stages"), op,
            "a 'pipeline' form only in the body of a loop with 'stages'", "one outside a scheduled loop");
  }
  // Where allocate-shared put an op's scratch.
  if (op.has_attr("scratch"))
    require(int_attr(op, "scratch") >= 0, op, "'scratch' of at least 0", std::to_string(int_attr(op, "scratch")));
}

// ---- the GPU IR's own ops ------------------------------------------------
void GpuRules::op(const Op& op) const {
  require(fn_.is_gpu(), op, "to be in GPU IR (a function with attributes {num_warps, ...})", "it in Tile IR");
  auto shared = [&](int i) -> const Type& {
    require(opnd(op, i).is_shared(), op, "operand #" + std::to_string(i) + " to be a buffer (smem<...>)",
            opnd(op, i).str());
    return opnd(op, i);
  };
  auto tokens_from = [&](size_t first) {
    for (size_t i = first; i < op.operands.size(); ++i)
      require(opnd(op, int(i)).is_token(), op, "operand #" + std::to_string(i) + " to be a token", opnd(op, int(i)).str());
  };
  // One mbarrier: a 64-bit buffer of one element (a slot of a ring).
  auto mbarrier = [&](int i) {
    const Type& t = shared(i);
    require(t.dtype == DType::i64 && !t.is_ptr && t.numel() == 1, op,
            "operand #" + std::to_string(i) + " to be an mbarrier (smem<1xi64>)", t.str());
  };
  auto pending = [&] {
    require(int_attr(op, "pending") >= 0, op, "'pending' of at least 0", std::to_string(int_attr(op, "pending")));
  };
  auto token_result = [&] {
    results(op, 1);
    require(res(op).is_token(), op, "a token result", res(op).str());
  };
  auto buffer_tile = [&](const Type& buf) { return Type{buf.dtype, buf.is_ptr, buf.shape}; };
  switch (op.kind) {
    case OpKind::ConvertLayout:
      operands(op, 1, 1);
      results(op, 1);
      require(opnd(op, 0).is_tile(), op, "a tile operand", opnd(op, 0).str());
      same_type(op, opnd(op, 0), res(op), "a result");
      optional_str_in(op, "move", {"registers", "shared", "remat", "matrix_loads"});
      // A conversion to a dot's fragments names the instruction and operand.
      if (op.attr_str_or("move", "") == "matrix_loads") {
        require(!op.attr_str_or("instr", "").empty(), op, "'instr' naming the dot's instruction", "none");
        require(op.has_attr("operand") && (int_attr(op, "operand") == 0 || int_attr(op, "operand") == 1), op,
                "'operand' of 0 (A) or 1 (B)", op.has_attr("operand") ? std::to_string(int_attr(op, "operand")) : "none");
      }
      break;
    case OpKind::LocalAlloc:
      operands(op, 0, 1);
      results(op, 1);
      require(res(op).is_shared() && !res(op).is_ptr, op, "a buffer result of numbers (smem<...>)", res(op).str());
      if (!op.operands.empty()) same_type(op, buffer_tile(res(op)), opnd(op, 0), "an initial value");
      if (op.has_attr("offset")) require(int_attr(op, "offset") >= 0, op, "'offset' of at least 0", std::to_string(int_attr(op, "offset")));
      // One with an initial value is written at its scratch.
      if (!op.operands.empty())
        require(!op.has_attr("offset"), op, "a buffer with an initial value placed by its 'scratch'", "an 'offset'");
      break;
    case OpKind::LocalSlot: {
      operands(op, 2, 2);
      results(op, 1);
      const Type& buf = shared(0);
      require(buf.rank() >= 2, op, "a buffer with a leading slot dimension", buf.str());
      require(opnd(op, 1) == scalar_type(DType::i32), op, "an i32 slot index", opnd(op, 1).str());
      Type want = buf;
      want.shape.erase(want.shape.begin());
      same_type(op, want, res(op), "a result");
      // Slots its layout leaves out are all laid out alike.
      if (size_t(buf.rank()) > fn_.layout_of(buf).out_dims().size())
        require(res(op).layout == buf.layout, op, "a result in its buffer's layout #l" + std::to_string(buf.layout),
                res(op).str());
      break;
    }
    case OpKind::LocalLoad:
      operands(op, 1, 2);
      results(op, 1);
      tokens_from(1);
      same_type(op, buffer_tile(shared(0)), res(op), "a result");
      break;
    case OpKind::LocalStore:
      operands(op, 2, 2);
      results(op, 0);
      same_type(op, buffer_tile(shared(0)), opnd(op, 1), "a stored value");
      break;
    case OpKind::AsyncCopy: {
      operands(op, 2, 3);
      token_result();
      const Type& buf = shared(0);
      const Type& ptr = opnd(op, 1);
      require(ptr.is_ptr && ptr.is_tile(), op, "a tile of pointers", ptr.str());
      same_type(op, Type{buf.dtype, true, buf.shape}, ptr, "pointers to the buffer's elements");
      if (op.operands.size() > 2) same_type(op, tile_like(ptr, DType::i1), opnd(op, 2), "a mask");
      optional_str(op, "cache");
      optional_str(op, "evict");
      break;
    }
    case OpKind::AsyncCommit:
      token_result();
      tokens_from(0);
      break;
    case OpKind::AsyncWait:
      token_result();
      tokens_from(0);
      pending();
      break;
    case OpKind::Barrier:
    case OpKind::FenceAsyncShared:
      operands(op, 0, 0);
      results(op, 0);
      if (op.kind == OpKind::Barrier && op.has_attr("cluster"))  // every thread of the cluster
        require(int_attr(op, "cluster") == 1, op, "'cluster' of 1", std::to_string(int_attr(op, "cluster")));
      break;
    case OpKind::MbarrierInit:
    case OpKind::MbarrierInval:
    case OpKind::MbarrierExpectTx:
    case OpKind::MbarrierArrive:
      operands(op, 1, 1);
      results(op, 0);
      mbarrier(0);
      if (op.kind == OpKind::MbarrierInit)
        require(int_attr(op, "count") >= 1, op, "'count' of at least 1", std::to_string(int_attr(op, "count")));
      if (op.kind == OpKind::MbarrierExpectTx)
        require(int_attr(op, "bytes") >= 0, op, "'bytes' of at least 0", std::to_string(int_attr(op, "bytes")));
      if (op.kind == OpKind::MbarrierArrive && op.has_attr("count"))
        require(int_attr(op, "count") >= 1, op, "'count' of at least 1", std::to_string(int_attr(op, "count")));
      if (op.kind == OpKind::MbarrierArrive && op.has_attr("cluster"))  // on the barrier in every CTA
        require(int_attr(op, "cluster") == 1, op, "'cluster' of 1", std::to_string(int_attr(op, "cluster")));
      if (op.kind == OpKind::MbarrierArrive && op.has_attr("per_warp"))
        require(int_attr(op, "per_warp") == 1, op, "'per_warp' of 1 (one arrival a warp, its first lane's)",
                std::to_string(int_attr(op, "per_warp")));
      break;
    case OpKind::MbarrierWait:
      operands(op, 2, 2);
      results(op, 0);
      mbarrier(0);
      require(opnd(op, 1) == scalar_type(DType::i32), op, "an i32 phase", opnd(op, 1).str());
      break;
    case OpKind::TmaLoad:
    case OpKind::TmaStore: {
      bool load = op.kind == OpKind::TmaLoad;
      size_t first = load ? 3 : 2;  // the first coordinate
      operands_at_least(op, first);
      results(op, 0);
      require(opnd(op, 0).is_scalar() && opnd(op, 0).is_ptr, op, "operand #0 to be a tensor descriptor (a pointer)",
              opnd(op, 0).str());
      const Type& buf = shared(1);
      if (load) mbarrier(2);
      const size_t coords = op.operands.size() - first;
      require(coords >= size_t(buf.rank()) && coords <= 5, op,
              std::to_string(buf.rank()) + " to 5 coordinates (one per dimension of the buffer, after the map's "
                                           "leading dimensions of box size 1)",
              std::to_string(coords));
      for (size_t i = first; i < op.operands.size(); ++i)
        require(opnd(op, int(i)) == scalar_type(DType::i32), op, "operand #" + std::to_string(i) + " to be an i32 coordinate",
                opnd(op, int(i)).str());
      if (!load) optional_str_in(op, "wait", {"read", "none"});
      if (load && op.has_attr("multicast"))  // into that many CTAs of the cluster, each issuing its share
        require(int_attr(op, "multicast") >= 2, op, "'multicast' of at least 2",
                std::to_string(int_attr(op, "multicast")));
      break;
    }
    case OpKind::TmaStoreWait:  // until the thread's tensor stores issued before it have read their buffers
      operands(op, 0, 0);
      results(op, 0);
      break;
    case OpKind::WarpSpecialize: {
      operands(op, 0, 0);
      results(op, 0);
      const auto& warps = ints_attr(op, "warps");
      const auto& regs = ints_attr(op, "registers");
      require(!op.regions.empty() && warps.size() == op.regions.size() && regs.size() == op.regions.size(), op,
              "'warps' and 'registers' with one entry a partition (region), " + std::to_string(op.regions.size()) +
                  " of them",
              std::to_string(warps.size()) + " and " + std::to_string(regs.size()));
      for (size_t i = 0; i < warps.size(); ++i) {
        require(warps[i] >= 1 && (is_pow2(warps[i]) || (warps[i] % 12 == 0 && is_pow2(warps[i] / 12))), op,
                "partitions of a power of two warps, or 12 or 24", std::to_string(warps[i]));
        require(regs[i] >= 24 && regs[i] <= 256 && regs[i] % 8 == 0, op,
                "registers a thread of 24 to 256, a multiple of 8", std::to_string(regs[i]));
      }
      // The other partitions' warps run nothing else: it is the function's
      // last op, at its top level.
      require(op.parent == &fn_.body && fn_.body.ops.back().get() == &op, op,
              "to be the last op of the function's top level", "it elsewhere");
      int64_t num_warps = std::get<int64_t>(fn_.attrs.at("num_warps"));  // function() checked it
      require(warps[0] == num_warps, op,
              "a first (default) partition of the function's num_warps " + std::to_string(num_warps) + " warps",
              std::to_string(warps[0]));
      for (const auto& sub : op.regions) {
        const Op* y = sub->terminator();
        require(y && y->kind == OpKind::Yield && y->operands.empty() && sub->args.empty(), op,
                "each partition a region without arguments ending in yield with no values",
                !sub->args.empty() ? "one with arguments"
                : y ? "a yield of " + std::to_string(y->operands.size()) + " values" : std::string("none"));
      }
      break;
    }
    case OpKind::TensorMap: {
      const auto& box = ints_attr(op, "box");
      size_t r = box.size();
      require(r >= 1 && r <= 5, op, "a box of rank 1 to 5", shape_str(box));
      for (int64_t b : box) require(b >= 1 && b <= 256, op, "box sizes of 1 to 256", shape_str(box));
      operands(op, 1 + 2 * r, 1 + 2 * r);
      results(op, 1);
      require(opnd(op, 0).is_ptr && opnd(op, 0).is_scalar(), op, "a scalar pointer base", opnd(op, 0).str());
      for (size_t i = 1; i < 1 + 2 * r; ++i)
        require(opnd(op, int(i)) == scalar_type(DType::i32), op,
                std::string(i <= r ? "a size" : "a stride") + " (operand #" + std::to_string(i) + ") of type i32",
                opnd(op, int(i)).str());
      require(res(op) == opnd(op, 0), op, "a result typed as its base " + opnd(op, 0).str(), res(op).str());
      int64_t sw = int_attr(op, "swizzle");
      require(sw == 0 || sw == 32 || sw == 64 || sw == 128, op, "'swizzle' of 0, 32, 64 or 128 bytes",
              std::to_string(sw));
      break;
    }
    case OpKind::NamedBarrier:
      operands(op, 0, 0);
      results(op, 0);
      require(int_attr(op, "id") >= 1 && int_attr(op, "id") <= 15, op, "'id' of 1 to 15 (0 is barrier's)",
              std::to_string(int_attr(op, "id")));
      require(int_attr(op, "threads") > 0 && int_attr(op, "threads") % 32 == 0, op,
              "'threads' a positive multiple of 32", std::to_string(int_attr(op, "threads")));
      if (op.has_attr("pingpong")) {
        static const std::set<std::string> turns = {"wait", "pass", "start", "finish"};
        require(turns.count(op.attr_str("pingpong")) != 0, op, "'pingpong' of wait, pass, start or finish",
                op.attr_str("pingpong"));
        const int64_t groups = op.has_attr("groups") ? int_attr(op, "groups") : 2;
        require(groups >= 2 && groups <= kMaxPingpongGroups, op,
                "a pingpong over 2 to " + std::to_string(kMaxPingpongGroups) + " warpgroups ('groups')",
                std::to_string(groups));
        require(int_attr(op, "id") <= 16 - groups, op,
                "a pingpong 'id' of 1 to " + std::to_string(16 - groups) +
                    (groups == 2 ? " (it takes id and id + 1)" : " (it takes id to id + " + std::to_string(groups - 1) + ")"),
                std::to_string(int_attr(op, "id")));
        require(int_attr(op, "threads") == 256, op, "a pingpong between two warpgroups (threads = 256)",
                std::to_string(int_attr(op, "threads")));
      }
      break;
    case OpKind::DotWait:
      pending();
      require(same_types(result_types(op), operand_types(op)) , op, "results typed as its operands " +
              types_str(operand_types(op)), types_str(result_types(op)));
      break;
    default:
      break;
  }
}

// ---- tokens and waits ------------------------------------------------------
namespace {

// The buffer a view (local_slot, a trans of a buffer) is part of.
const Value* root_buffer(const Value* v) {
  while (v->def && (v->def->kind == OpKind::LocalSlot || v->def->kind == OpKind::Trans) && v->def->operands[0]->type.is_shared())
    v = v->def->operands[0];
  return v;
}

bool copies_into(const Op& op, const Value* root) {
  if (op.kind == OpKind::AsyncCopy && root_buffer(op.operands[0]) == root) return true;
  for (const auto& sub : op.regions)
    for (const auto& o : sub->ops)
      if (copies_into(*o, root)) return true;
  return false;
}

// An if every arm of which waits at its top level (a loop's first
// iteration waiting for fewer groups than the others).
bool waits_in_every_arm(const Op& op) {
  if (op.kind != OpKind::If || op.regions.size() < 2) return false;
  return std::all_of(op.regions.begin(), op.regions.end(), [](const auto& r) {
    return std::any_of(r->ops.begin(), r->ops.end(), [](const auto& o) { return o->kind == OpKind::AsyncWait; });
  });
}

// Walking back from `read` through its region and the regions around it,
// a wait comes before any copy into `root`.
bool waited(const Op& read, const Value* root) {
  const Op* at = &read;
  for (const Region* r = read.parent; r; r = at->parent) {
    auto it = std::find_if(r->ops.begin(), r->ops.end(), [&](const auto& o) { return o.get() == at; });
    while (it != r->ops.begin()) {
      const Op& o = **--it;
      if (o.kind == OpKind::AsyncWait || waits_in_every_arm(o)) return true;
      if (copies_into(o, root)) return false;
    }
    if (!r->parent) return true;
    at = r->parent;
  }
  return true;
}

}  // namespace

void GpuRules::tokens_and_waits() const {
  std::unordered_set<const Value*> used, filled;
  std::vector<const Op*> reads;
  walk(const_cast<Region&>(fn_.body), [&](Op* op) {
    for (size_t i = 0; i < op->operands.size(); ++i)
      if (op->operands[i]->type.is_token())
        require(used.insert(op->operands[i]).second, *op,
                "operand #" + std::to_string(i) + " to be a token no other op uses (each token is used once)",
                "one used before");
    if (op->kind == OpKind::AsyncCopy) filled.insert(root_buffer(op->operands[0]));
    bool reads_buffer = op->kind == OpKind::LocalLoad || op->kind == OpKind::Dot;
    if (reads_buffer) reads.push_back(op);
  });
  for (const Op* op : reads)
    for (size_t i = 0; i < op->operands.size() && i < 2; ++i) {
      if (!op->operands[i]->type.is_shared()) continue;
      const Value* root = root_buffer(op->operands[i]);
      if (filled.count(root) && !waited(*op, root))
        fail(*op, "an async_wait between the asynchronous copies into its buffer and this read",
             "a copy into it with no wait after it");
    }
}

}  // namespace tl::ir::verify_rules
