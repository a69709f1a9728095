// Lowering of reductions and scans (see lowerer.h): registers first, then
// lane shuffles, then one exchange between warps through shared memory.
//
// The exchange goes in one of two small slots of the scratch region when it
// fits ({exchange = k}, which insert-barriers gives in turn), so that
// back-to-back reductions (a row's max, then its sum) need one barrier
// each rather than two: the barrier between one reduction's writes and
// reads also frees the slot the next one writes.
#include "codegen/lowerer.h"

namespace tl::codegen::lowering {

// Within a partition of a warp_specialize, a barrier of its threads.
void Lowerer::barrier() {
  sync_threads();
  ++op_barriers_;
}

void Lowerer::sync_threads() {
  if (partition_.threads) t_.named_barrier(b_, b_.getInt32(partition_.barrier_id), partition_.threads);
  else t_.barrier(b_);
}

// Step 4 of a reduction whose axis is split over the CTAs of a cluster.
// Every thread holds its CTA's partials of its result elements; the owner
// of each element sends it to every other CTA of its group (distributed
// shared memory, counted on the receiver's transaction barrier), at the
// sender's place in the receiver's slot. Each CTA then waits for its
// barrier's phase and combines the group's partials in rank order (its
// own from registers), so every CTA computes the same bits. No cluster-wide
// barrier: a CTA cannot get two exchanges ahead of another (each needs the
// other's partials), so two alternating slots suffice, provided this CTA's
// threads are past their reads of one slot before it sends on the other
// (after which a peer may refill the first).
void Lowerer::reduce_across_ctas(const Op& op, const LinearLayout& s, const std::vector<int>& block_bits,
                                 std::vector<std::vector<llvm::Value*>>& acc, const std::vector<int64_t>& rshape) {
  size_t n = op.operands.size();
  bool scalar = rshape.empty();
  int64_t elems = 1;
  for (auto x : rshape) elems *= x;
  int groups = 1 << block_bits.size();
  // Values travel as 4- or 8-byte words.
  std::vector<int64_t> word(n), base(n);
  int64_t total = 0;
  for (size_t i = 0; i < n; ++i) {
    word[i] = alloc_size(acc[0][i]->getType()) > 4 ? 8 : 4;
    base[i] = total;
    total += groups * elems * word[i];
  }
  if (total > kClusterSlotBytes)
    unsupported(op, "over a dimension split across the CTAs of a cluster needs " + std::to_string(total) +
                        " bytes of partials; at most " + std::to_string(kClusterSlotBytes) + " are supported");
  // Slots in turn, as insert-barriers numbered them; it made this CTA's
  // threads be past their reads of the other one.
  if (!op.has_attr("cluster_slot"))
    unsupported(op, "across the CTAs of a cluster expects attribute 'cluster_slot' (insert-barriers gives it), found none");
  int cs = int(op.attr_int("cluster_slot"));
  // This CTA's place in its group, and the group's ranks.
  llvm::Value* me = b_.getInt32(0);
  for (size_t k = 0; k < block_bits.size(); ++k)
    me = b_.CreateOr(me, b_.CreateShl(b_.CreateAnd(b_.CreateLShr(block_, block_bits[k]), 1), uint64_t(k)));
  uint32_t group_mask = 0;
  for (int bit : block_bits) group_mask |= 1u << bit;
  llvm::Value* others = b_.CreateAnd(block_, b_.getInt32(int32_t(~group_mask)));
  auto rank_of = [&](int g) {
    uint32_t bits = 0;
    for (size_t k = 0; k < block_bits.size(); ++k)
      if (g >> k & 1) bits |= 1u << block_bits[k];
    return b_.CreateOr(others, b_.getInt32(int32_t(bits)));
  };
  auto hw = scalar ? std::vector<llvm::Value*>{} : hw_coords(s);
  // Byte address (shared, i32) of operand i's partial of element `idx`
  // from group member g.
  auto at = [&](size_t i, llvm::Value* g, llvm::Value* idx) {
    llvm::Value* word_index = b_.CreateAdd(b_.CreateMul(g, b_.getInt32(int32_t(elems))), idx);
    llvm::Value* off = b_.CreateAdd(b_.CreateMul(word_index, b_.getInt32(int32_t(word[i]))),
                                    b_.getInt32(int32_t(cs * kClusterSlotBytes + base[i])));
    return b_.CreateAdd(b_.CreatePtrToInt(smem_, b_.getInt32Ty()), off);
  };
  // Each result register's element index (the same in every CTA).
  std::vector<llvm::Value*> index;
  for (size_t j = 0; j < acc.size(); ++j)
    index.push_back(scalar ? b_.getInt32(0) : flat_index(hw, reg_coords(s, int(j)), rshape));
  auto to_word = [&](llvm::Value* v, int64_t w) {
    llvm::Type* ty = v->getType();
    unsigned bits = unsigned(m_->getDataLayout().getTypeSizeInBits(ty));
    if (ty->isPointerTy()) return b_.CreatePtrToInt(v, b_.getInt64Ty());
    llvm::Value* x = b_.CreateBitCast(v, b_.getIntNTy(bits));
    return bits == unsigned(w * 8) ? x : b_.CreateZExt(x, b_.getIntNTy(unsigned(w * 8)));
  };
  auto from_word = [&](llvm::Value* x, llvm::Type* ty) -> llvm::Value* {
    if (ty->isPointerTy()) return b_.CreateIntToPtr(x, ty);
    unsigned bits = unsigned(m_->getDataLayout().getTypeSizeInBits(ty));
    if (x->getType()->getIntegerBitWidth() != bits) x = b_.CreateTrunc(x, b_.getIntNTy(bits));
    return b_.CreateBitCast(x, ty);
  };
  llvm::Value* bar = cluster_bar(cs);
  // This phase receives every other member's partials.
  guarded(b_.CreateICmpEQ(tid_, b_.getInt32(0)), [&]() -> llvm::Value* {
    int64_t bytes = 0;
    for (size_t i = 0; i < n; ++i) bytes += (groups - 1) * elems * word[i];
    t_.expect_bytes(b_, bar, b_.getInt32(int32_t(bytes)));
    return nullptr;
  }, nullptr);
  // Owners within this CTA send (lanes and warps that hold copies do not).
  llvm::Value* owner = b_.getTrue();
  if (uint32_t lm = s.broadcast_mask(kLane)) owner = b_.CreateICmpEQ(b_.CreateAnd(lane_, lm), b_.getInt32(0));
  if (uint32_t wm = s.broadcast_mask(kWarp))
    owner = b_.CreateAnd(owner, b_.CreateICmpEQ(b_.CreateAnd(warp_, wm), b_.getInt32(0)));
  if (s.in_size(kWarp) < plan_.num_warps)
    owner = b_.CreateAnd(owner, b_.CreateICmpULT(warp_, b_.getInt32(s.in_size(kWarp))));
  auto dup = scalar ? std::vector<bool>(acc.size(), false) : duplicate_regs(s);
  for (size_t j = 0; j < acc.size(); ++j) {
    if (dup[j]) continue;
    llvm::Value* idx = index[j];
    for (int g = 0; g < groups; ++g) {
      llvm::Value* send = b_.CreateAnd(owner, b_.CreateICmpNE(me, b_.getInt32(g)));
      guarded(send, [&]() -> llvm::Value* {
        for (size_t i = 0; i < n; ++i) t_.send_to_cta(b_, at(i, me, idx), to_word(acc[j][i], word[i]), bar, rank_of(g));
        return nullptr;
      }, nullptr);
    }
  }
  // Wait for this phase, then flip the parity waited for next time.
  llvm::Value* parity = b_.CreateLoad(b_.getInt32Ty(), cluster_phase_[cs]);
  wait_mbarrier(bar, parity);
  b_.CreateStore(b_.CreateXor(parity, b_.getInt32(1)), cluster_phase_[cs]);
  for (size_t j = 0; j < acc.size(); ++j) {
    llvm::Value* idx = index[j];
    std::vector<std::vector<llvm::Value*>> items;
    for (int g = 0; g < groups; ++g) {
      std::vector<llvm::Value*> t;
      llvm::Value* mine = b_.CreateICmpEQ(me, b_.getInt32(g));
      for (size_t i = 0; i < n; ++i) {
        llvm::Type* ty = acc[j][i]->getType();
        llvm::Value* p = b_.CreateIntToPtr(at(i, b_.getInt32(g), idx), b_.getPtrTy(t_.shared_address_space()));
        llvm::Value* got = from_word(b_.CreateLoad(b_.getIntNTy(unsigned(word[i] * 8)), p), ty);
        t.push_back(b_.CreateSelect(mine, acc[j][i], got));
      }
      items.push_back(t);
    }
    acc[j] = tree(*op.regions[0], items);
  }
}

// Applies a combine region to (lhs..., rhs...) scalars.
std::vector<llvm::Value*> Lowerer::combine(const ir::Region& region, const std::vector<llvm::Value*>& lhs,
                                  const std::vector<llvm::Value*>& rhs) {
  size_t n = lhs.size();
  for (size_t i = 0; i < n; ++i) {
    vals_[region.args[i].get()] = {lhs[i]};
    vals_[region.args[n + i].get()] = {rhs[i]};
  }
  lower_region(region);
  std::vector<llvm::Value*> out;
  for (const ir::Value* y : region.terminator()->operands) out.push_back(get(y)[0]);
  return out;
}

// Pairwise (balanced tree) combination of a list of tuples.
std::vector<llvm::Value*> Lowerer::tree(const ir::Region& region, std::vector<std::vector<llvm::Value*>> items) {
  if (items.empty()) throw Error("internal: a reduction group with no registers");
  while (items.size() > 1) {
    std::vector<std::vector<llvm::Value*>> next;
    for (size_t i = 0; i + 1 < items.size(); i += 2) next.push_back(combine(region, items[i], items[i + 1]));
    if (items.size() % 2) next.push_back(items.back());
    items = std::move(next);
  }
  return items[0];
}

// 32-bit pieces of a value, for shuffles.
llvm::Value* Lowerer::shuffle(llvm::Value* v, int mask) {
  llvm::Type* ty = v->getType();
  if (ty->isPointerTy()) return b_.CreateIntToPtr(shuffle(b_.CreatePtrToInt(v, b_.getInt64Ty()), mask), ty);
  unsigned bits = unsigned(m_->getDataLayout().getTypeSizeInBits(ty));
  llvm::Value* as_int = b_.CreateBitCast(v, b_.getIntNTy(bits));
  if (bits == 64) {
    llvm::Value* lo = b_.CreateTrunc(as_int, b_.getInt32Ty());
    llvm::Value* hi = b_.CreateTrunc(b_.CreateLShr(as_int, 32), b_.getInt32Ty());
    lo = t_.shuffle_xor(b_, lo, mask);
    hi = t_.shuffle_xor(b_, hi, mask);
    llvm::Value* r = b_.CreateOr(b_.CreateZExt(lo, b_.getInt64Ty()), b_.CreateShl(b_.CreateZExt(hi, b_.getInt64Ty()), 32));
    return b_.CreateBitCast(r, ty);
  }
  llvm::Value* wide = bits == 32 ? as_int : b_.CreateZExt(as_int, b_.getInt32Ty());
  llvm::Value* got = t_.shuffle_xor(b_, wide, mask);
  return b_.CreateBitCast(bits == 32 ? got : b_.CreateTrunc(got, b_.getIntNTy(bits)), ty);
}

void Lowerer::lower_reduce(const Op& op) {
  int axis = int(op.attr_int("axis"));
  size_t n = op.operands.size();
  const ir::Region& region = *op.regions[0];
  std::vector<Regs> in;
  for (size_t i = 0; i < n; ++i) in.push_back(operand(op, int(i)));
  for (const Regs& r : in)
    if (r.size() != in[0].size()) throw Error("internal: the operands of a reduction hold different registers");
  auto req = required_operand_layout(op, 0, plan_);
  LinearLayout l = req ? *req : plan_.of(op.operands[0]);
  const auto& shape = op.operands[0]->type.shape;
  bool scalar = shape.size() == 1;
  // A repeat along the axis: registers' are combined in step 1 like their
  // bits, warps' (12 warps: three groups) in step 3; CTAs' are refused.
  if (repeat_along(l, kBlock, axis) > 1) unsupported(op, "along a dim whose CTAs repeat over it, so far");
  LinearLayout s = l.slice(axis);
  int out_regs = scalar ? 1 : num_regs(s);

  // 1. Within a thread: registers that differ only along the axis.
  std::vector<std::vector<llvm::Value*>> acc(out_regs);
  auto dup = duplicate_regs(l);
  for (int j = 0; j < out_regs; ++j) {
    LinearLayout::Coords want = scalar ? LinearLayout::Coords{} : reg_coords(s, j);
    std::vector<std::pair<int32_t, int>> members;  // (axis coordinate, register)
    for (int r = 0; r < num_regs(l); ++r) {
      if (dup[r]) continue;
      auto c = reg_coords(l, r);
      int32_t along = c[axis];
      c.erase(c.begin() + axis);
      if (c == want) members.push_back({along, r});
    }
    std::sort(members.begin(), members.end());
    std::vector<std::vector<llvm::Value*>> items;
    for (auto [along, r] : members) {
      std::vector<llvm::Value*> t;
      for (size_t i = 0; i < n; ++i) t.push_back(in[i][r]);
      items.push_back(t);
    }
    acc[j] = tree(region, items);
  }
  // 2. Across lanes whose bits move along the axis.
  for (const auto& d : l.in_dims()) {
    if (d.name != kLane) continue;
    for (size_t bit = 0; bit < d.bases.size(); ++bit) {
      if (d.bases[bit][axis] == 0) continue;
      for (auto& a : acc) {
        std::vector<llvm::Value*> other;
        for (auto* v : a) other.push_back(shuffle(v, 1 << bit));
        a = combine(region, a, other);
      }
    }
  }
  // 3. Across warps: each writes its partials, then every thread combines
  // the partials of the warps along the axis in order.
  std::vector<int> warp_bits = bits_along(l, kWarp, axis);
  const int warp_repeat = repeat_along(l, kWarp, axis);
  if (int groups = groups_along(l, kWarp, axis); groups > 1) {
    std::vector<int64_t> rshape = shape;
    rshape.erase(rshape.begin() + axis);
    int64_t slots = 1;
    for (auto x : rshape) slots *= x;
    std::vector<int64_t> base(n);
    int64_t total = 0;
    for (size_t i = 0; i < n; ++i) {
      base[i] = total;
      total += groups * slots * alloc_size(acc[0][i]->getType());
      total = (total + 15) / 16 * 16;
    }
    // Slot `ex` of two ({exchange}), or the whole scratch region (ex = -1)
    // when too big.
    int ex = op.has_attr("exchange") ? int(op.attr_int("exchange")) : -1;
    int64_t at = ex < 0 ? 0 : ex * kExchangeSlotBytes;
    need_smem(at + total);
    for (auto& b : base) b += at;
    // This warp's index among the warps along the axis.
    llvm::Value* group = b_.getInt32(0);
    for (size_t k = 0; k < warp_bits.size(); ++k)
      group = b_.CreateOr(group, b_.CreateShl(b_.CreateAnd(b_.CreateLShr(warp_, warp_bits[k]), 1), uint64_t(k)));
    // The repeat's digit sits above the warp's bits, and above the
    // groups' bits in `group`.
    if (warp_repeat > 1)
      group = b_.CreateAdd(group, b_.CreateShl(b_.CreateLShr(warp_, uint64_t(l.in_bits(kWarp))), uint64_t(warp_bits.size())));
    auto hw = scalar ? std::vector<llvm::Value*>{} : hw_coords(s);
    auto slot = [&](int j) -> llvm::Value* {
      return scalar ? static_cast<llvm::Value*>(b_.getInt32(0)) : flat_index(hw, reg_coords(s, j), rshape);
    };
    scratch_fence();
    for (int j = 0; j < out_regs; ++j)
      for (size_t i = 0; i < n; ++i)
        smem_store(acc[j][i], b_.CreateAdd(b_.CreateMul(group, b_.getInt32(int32_t(slots))), slot(j)),
                   acc[j][i]->getType(), base[i]);
    barrier();
    // When the low lane bits replicate the result (a reduction to a
    // scalar, say), lane l reads the partial of warp group (l mod groups)
    // and shuffles across those bits combine the groups: one read per
    // lane instead of one per warp. Otherwise every lane reads them all.
    bool lanes_replicate = warp_repeat == 1 && groups <= plan_.warp_size &&
                           (scalar || (s.broadcast_mask(kLane) & uint32_t(groups - 1)) == uint32_t(groups - 1));
    for (int j = 0; j < out_regs && !lanes_replicate; ++j) {
      std::vector<std::vector<llvm::Value*>> items;
      for (int g = 0; g < groups; ++g) {
        std::vector<llvm::Value*> t;
        for (size_t i = 0; i < n; ++i)
          t.push_back(smem_load(acc[j][i]->getType(), b_.CreateAdd(b_.getInt32(int32_t(g * slots)), slot(j)), base[i]));
        items.push_back(t);
      }
      acc[j] = tree(region, items);
    }
    llvm::Value* mine = b_.CreateAnd(lane_, groups - 1);
    for (int j = 0; j < out_regs && lanes_replicate; ++j) {
      std::vector<llvm::Value*> v;
      for (size_t i = 0; i < n; ++i)
        v.push_back(smem_load(acc[j][i]->getType(),
                              b_.CreateAdd(b_.CreateMul(mine, b_.getInt32(int32_t(slots))), slot(j)), base[i]));
      for (int bit = 1; bit < groups; bit <<= 1) {
        std::vector<llvm::Value*> other;
        for (auto* x : v) other.push_back(shuffle(x, bit));
        v = combine(region, v, other);
      }
      acc[j] = v;
    }
  }
  // 4. Across the CTAs of a cluster.
  std::vector<int> block_bits = bits_along(l, kBlock, axis);
  if (!block_bits.empty()) {
    std::vector<int64_t> rshape = shape;
    rshape.erase(rshape.begin() + axis);
    reduce_across_ctas(op, s, block_bits, acc, rshape);
  }
  // The results are in the sliced layout (convert_layouts moves them on
  // where their users asked for another).
  for (size_t i = 0; i < n; ++i) {
    Regs out;
    for (int j = 0; j < out_regs; ++j) out.push_back(acc[j][i]);
    const ir::Value* res = op.result(int(i));
    if (!scalar) check_own_layout(op, res, s);
    vals_[res] = out;
  }
}

// A scan runs in a layout whose bases move the axis by single bits
// (scannable). Axis bits are merged from the lowest: at each level, blocks
// of 2^k consecutive elements pair up, and the second block of a pair (in
// scan order) takes the first one's total as a prefix. The lowest run of
// register bits is scanned sequentially in each thread; a register bit
// pairs blocks within a thread, a lane bit across lanes (one shuffle per
// block total), a run of warp bits through shared memory (each warp's
// totals, read back by every warp). Prefixes from above the lowest run are
// kept per segment and applied once at the end, so an element costs one
// combine per level of its thread's registers and one more at the end,
// and every thread holds only its part of the axis.
void Lowerer::lower_scan(const Op& op) {
  const int axis = int(op.attr_int("axis"));
  const bool reverse = op.attr_int_or("reverse", 0) != 0;
  const ir::Region& region = *op.regions[0];
  const size_t n = op.operands.size();
  const auto& shape = op.operands[0]->type.shape;
  std::vector<Regs> in;
  for (size_t i = 0; i < n; ++i) in.push_back(operand(op, int(i)));
  const LinearLayout l = *required_operand_layout(op, 0, plan_);
  if (!scannable(l, axis))
    unsupported(op, "along a dimension split across the CTAs of a cluster is not supported yet; use num_ctas = 1");
  using Tuple = std::vector<llvm::Value*>;
  auto select = [&](llvm::Value* c, const Tuple& a, const Tuple& b) {
    Tuple out;
    for (size_t i = 0; i < n; ++i) out.push_back(b_.CreateSelect(c, a[i], b[i]));
    return out;
  };
  // The axis bits from the lowest, each with the input bit that moves it.
  struct Level { std::string in; int bit; };
  std::vector<Level> levels(size_t(ilog2(shape[size_t(axis)])));
  for (const auto& d : l.in_dims())
    for (size_t bit = 0; bit < d.bases.size(); ++bit)
      if (int32_t a = d.bases[bit][size_t(axis)]) levels[size_t(ilog2(a))] = {d.name, int(bit)};
  // A register's coordinates with the axis bits below `k` cleared: its
  // block at level k within this thread.
  auto key = [&](int r, int k) {
    auto c = reg_coords(l, r);
    c[size_t(axis)] &= ~((int32_t(1) << k) - 1);
    return c;
  };
  const auto dup = duplicate_regs(l);
  // 1. The lowest run of register bits: each segment scanned in order.
  int low = 0;
  while (low < int(levels.size()) && levels[size_t(low)].in == kReg) ++low;
  std::map<LinearLayout::Coords, std::vector<std::pair<int32_t, int>>> segs;  // key -> (axis coord, register)
  for (int r = 0; r < num_regs(l); ++r)
    if (!dup[r]) segs[key(r, low)].push_back({reg_coords(l, r)[size_t(axis)], r});
  std::vector<Regs> out(n, Regs(size_t(num_regs(l))));
  struct Segment { Tuple prefix; llvm::Value* valid; };
  std::map<LinearLayout::Coords, Segment> seg;
  std::map<LinearLayout::Coords, Tuple> total;  // block key -> total
  for (auto& [k, members] : segs) {
    std::sort(members.begin(), members.end());
    if (reverse) std::reverse(members.begin(), members.end());
    Tuple acc;
    for (auto [along, r] : members) {
      Tuple cur;
      for (size_t i = 0; i < n; ++i) cur.push_back(in[i][size_t(r)]);
      acc = acc.empty() ? cur : combine(region, acc, cur);
      for (size_t i = 0; i < n; ++i) out[i][size_t(r)] = acc[i];
    }
    total[k] = acc;
    seg[k] = {acc, b_.getFalse()};
  }
  // Adds `pre` (valid where `take`) before a segment's prefix.
  auto prepend = [&](Segment& sg, const Tuple& pre, llvm::Value* take) {
    Tuple both = combine(region, pre, sg.prefix);
    Tuple joined = select(sg.valid, both, pre);
    sg.prefix = select(take, joined, sg.prefix);
    sg.valid = b_.CreateOr(sg.valid, take);
  };
  // The block (at level k) a segment lies in.
  auto block_of = [&](LinearLayout::Coords seg_key, int k) {
    seg_key[size_t(axis)] &= ~((int32_t(1) << k) - 1);
    return seg_key;
  };
  // 2. The levels above it.
  for (int k = low; k < int(levels.size());) {
    const Level lv = levels[size_t(k)];
    const int32_t v = int32_t(1) << k;
    if (lv.in == kReg) {
      // Pairs of blocks within the thread: (key, key | v); the second in
      // scan order takes the first's total.
      for (auto& [sk, sg] : seg) {
        auto bk = block_of(sk, k);
        if (bool(bk[size_t(axis)] & v) == reverse) continue;  // in the first block
        bk[size_t(axis)] ^= v;
        prepend(sg, total.at(bk), b_.getTrue());
      }
      std::map<LinearLayout::Coords, Tuple> next;
      for (auto& [bk, t] : total) {
        if (bk[size_t(axis)] & v) continue;
        auto hi = bk;
        hi[size_t(axis)] |= v;
        next[bk] = reverse ? combine(region, total.at(hi), t) : combine(region, t, total.at(hi));
      }
      total = std::move(next);
      ++k;
    } else if (lv.in == kLane) {
      // The partner lane's block total; this lane's block is the second
      // one of the pair when its bit is set (clear, in a reverse scan).
      llvm::Value* set = b_.CreateICmpNE(b_.CreateAnd(lane_, b_.getInt32(1 << lv.bit)), b_.getInt32(0));
      llvm::Value* second = reverse ? b_.CreateNot(set) : set;
      std::map<LinearLayout::Coords, Tuple> other;
      for (auto& [bk, t] : total)
        for (auto* x : t) other[bk].push_back(shuffle(x, 1 << lv.bit));
      for (auto& [sk, sg] : seg) prepend(sg, other.at(block_of(sk, k)), second);
      for (auto& [bk, t] : total) {
        const Tuple& o = other.at(bk);
        t = combine(region, select(second, o, t), select(second, t, o));
      }
      ++k;
    } else if (lv.in == kWarp) {
      // A run of warp bits: axis bits k .. k + m - 1, one exchange.
      int m = 0;
      while (k + m < int(levels.size()) && levels[size_t(k + m)].in == kWarp) ++m;
      const int32_t run = ((int32_t(1) << m) - 1) << k, below = (int32_t(1) << k) - 1;
      int64_t numel = 1;
      for (auto x : shape) numel *= x;
      std::vector<int64_t> base(n);
      int64_t bytes = 0;
      for (size_t i = 0; i < n; ++i) {
        base[i] = bytes;
        bytes = (bytes + numel * alloc_size(total.begin()->second[i]->getType()) + 15) / 16 * 16;
      }
      need_smem(bytes);
      auto hw = hw_coords(l);
      // The flat index of block `bk`'s element whose run bits are `w`
      // (nullptr: this thread's own) and lower axis bits 0.
      auto index = [&](const LinearLayout::Coords& bk, llvm::Value* w) {
        std::vector<llvm::Value*> h = hw;
        llvm::Value* a = b_.CreateAnd(h[size_t(axis)], b_.getInt32(~(below | (w ? run : 0))));
        h[size_t(axis)] = w ? b_.CreateOr(a, b_.CreateShl(w, uint64_t(k))) : a;
        return flat_index(h, bk, shape);
      };
      scratch_fence();
      for (auto& [bk, t] : total)
        for (size_t i = 0; i < n; ++i) smem_store(t[i], index(bk, nullptr), t[i]->getType(), base[i]);
      barrier();
      llvm::Value* mine = b_.CreateAnd(b_.CreateLShr(hw[size_t(axis)], uint64_t(k)), b_.getInt32((1 << m) - 1));
      std::map<LinearLayout::Coords, std::pair<Tuple, llvm::Value*>> prefix;  // block -> (earlier warps, any)
      for (auto& [bk, t] : total) {
        // In scan order: warps 0, 1, ... (m-1, ..., 0 in a reverse scan).
        Tuple pre, all;
        llvm::Value* any = b_.getFalse();
        for (int j = 0; j < (1 << m); ++j) {
          int w = reverse ? (1 << m) - 1 - j : j;
          Tuple tw;
          for (size_t i = 0; i < n; ++i)
            tw.push_back(smem_load(t[i]->getType(), index(bk, b_.getInt32(w)), base[i]));
          // Warp w comes before this one in scan order.
          llvm::Value* before = reverse ? b_.CreateICmpUGT(b_.getInt32(w), mine) : b_.CreateICmpULT(b_.getInt32(w), mine);
          if (j == 0) {
            pre = tw;
            any = before;
          } else {
            pre = select(before, select(any, combine(region, pre, tw), tw), pre);
            any = b_.CreateOr(any, before);
          }
          all = j == 0 ? tw : combine(region, all, tw);
        }
        prefix[bk] = {pre, any};
        t = all;
      }
      for (auto& [sk, sg] : seg) {
        const auto& [pre, any] = prefix.at(block_of(sk, k));
        prepend(sg, pre, any);
      }
      // The next exchange (or other scratch user) starts with a barrier.
      k += m;
    } else {
      unsupported(op, "along a dimension split across the CTAs of a cluster is not supported yet; use num_ctas = 1");
    }
  }
  // 3. Each element after its segment's prefix; copies of a register
  // (broadcast bits) take the first's value.
  std::map<LinearLayout::Coords, int> first_of;
  for (auto& [sk, sg] : seg) {
    for (auto [along, r] : segs.at(sk)) {
      Tuple cur;
      for (size_t i = 0; i < n; ++i) cur.push_back(out[i][size_t(r)]);
      Tuple with = combine(region, sg.prefix, cur);
      Tuple v = select(sg.valid, with, cur);
      for (size_t i = 0; i < n; ++i) out[i][size_t(r)] = v[i];
      first_of[reg_coords(l, r)] = r;
    }
  }
  for (int r = 0; r < num_regs(l); ++r)
    if (dup[r])
      for (size_t i = 0; i < n; ++i) out[i][size_t(r)] = out[i][size_t(first_of.at(reg_coords(l, r)))];
  for (size_t i = 0; i < n; ++i) {
    check_own_layout(op, op.result(int(i)), l);
    vals_[op.result(int(i))] = out[i];
  }
}

}  // namespace tl::codegen::lowering
