// Lowering of dot (see lowerer.h, dot_layout.h): the target's matrix
// instruction over the tile's fragments, operands read from swizzled shared
// memory with 8x8 matrix loads one K step ahead of the multiplies, or the
// FMA form where no instruction fits.
#include "codegen/lowerer.h"
#include "codegen/pipeline_plan.h"

namespace tl::codegen::lowering {

// A x B + C on the target's matrix instruction: for each (m, n) fragment
// of this warp, walk K through the instruction, picking each fragment's
// registers out of the tile layouts (dot_layout.h).
// Operands in shared memory are read one K step at a time, right before
// the instructions of that step, which keeps few fragments live.
void Lowerer::lower_dot(const Op& op) {
  const DotLayouts& d = plan_.dots.at(&op);
  DType acc = op.result()->type.dtype;
  Regs c = operand(op, 2);
  if (!d.instr) {
    vals_[op.result()] = fma_dot(op, d, dot_operand(op, 0), dot_operand(op, 1), c);
    return;
  }
  if (op.attr_int_or("async", 0) && !d.on_warpgroups())
    unsupported(op, "with async = 1 expects a warpgroup instruction, found '" + op.attr_str_or("instr", "") + "'");
  if (d.on_warpgroups()) {
    vals_[op.result()] = warpgroup_dot(op, d, c);
    return;
  }
  std::optional<SmemTile> tile[2];
  Regs regs[2];
  int64_t staged = 0;
  for (int i = 0; i < 2; ++i) {
    tile[i] = smem_source(op, i, staged);
    if (!tile[i]) regs[i] = dot_operand(op, i);
  }
  if (staged) barrier();  // staged tiles are written
  const MatrixInstr& mi = *d.instr;
  for (auto*& v : c) v = cast(v, acc, mi.acc, op);
  int na = mi.a.in_size(kReg), nb = mi.b.in_size(kReg), nc = mi.c.in_size(kReg);
  // The fragments of step s + 1 are read before the instructions of step
  // s, so their shared-memory latency overlaps the multiplies.
  Regs next[2];
  const OperandFragments frags[2] = {operand_fragments(d, 0), operand_fragments(d, 1)};
  llvm::Type* ety = value_type(op.operands[0]->type);
  for (int i = 0; i < 2; ++i)
    if (tile[i]) next[i] = load_fragments(*tile[i], frags[i], 0, ety);
  for (int s = 0; s < d.reps_k; ++s) {
    for (int i = 0; i < 2; ++i)
      if (tile[i]) {
        regs[i] = next[i];
        if (s + 1 < d.reps_k) next[i] = load_fragments(*tile[i], frags[i], s + 1, ety);
      }
    for (int i = 0; i < d.reps_m; ++i)
      for (int j = 0; j < d.reps_n; ++j) {
        Regs af(na), bf(nb), cf(nc);
        for (int r = 0; r < na; ++r) af[r] = regs[0][frags[0].reg(i, s, r)];
        for (int r = 0; r < nb; ++r) bf[r] = regs[1][frags[1].reg(j, s, r)];
        for (int r = 0; r < nc; ++r) cf[r] = c[d.c_reg(i, j, r)];
        cf = t_.matrix_multiply(b_, mi, af, bf, cf);
        for (int r = 0; r < nc; ++r) c[d.c_reg(i, j, r)] = cf[r];
      }
  }
  for (auto*& v : c) v = cast(v, mi.acc, acc, op);
  vals_[op.result()] = c;
}

// A x B + C on warpgroup instructions: B in shared memory (a pipeline's
// buffer, else stored now) read through descriptors, and A too unless it
// comes from registers (DotLayouts::a_in_registers), each instruction
// taking its fragment's registers. Each
// warpgroup issues the instructions of its rows and commits them as a
// group. A synchronous dot then waits for them: the result, and the
// buffers, are free once the dot is done; an asynchronous one ({async = 1},
// async_dots.h) returns the accumulators in flight, which its dot_wait
// retires.
Regs Lowerer::warpgroup_dot(const Op& op, const DotLayouts& d, Regs c) {
  const MatrixInstr& mi = *d.instr;
  const bool async = op.attr_int_or("async", 0) != 0;
  DType acc = op.result()->type.dtype;
  if (async && acc != mi.acc)
    unsupported(op, "with async = 1 expects the accumulator in the instruction's type " +
                        std::string(dtype_name(mi.acc)) + ", found " + std::string(dtype_name(acc)));
  if (int entry = t_.register_cap(entry_threads_, plan_.programs_per_sm); entry > 0)
    if (auto why = warpgroup_register_shortfall(d, entry, entry_threads_); !why.empty()) unsupported(op, why);
  SmemTile tile[2];
  int64_t staged = 0;  // bytes past scratch_base_
  for (int i = d.a_in_registers ? 1 : 0; i < 2; ++i) {
    const ir::Value* v = op.operands[i];
    if (auto it = smem_vals_.find(v); it != smem_vals_.end()) {
      tile[i] = it->second;
      continue;
    }
    if (async) unsupported(op, "with async = 1 expects operand #" + std::to_string(i) + " in a buffer, found a tile");
    if (staged == 0) scratch_fence();  // the op's earlier scratch use is done
    int64_t align = mi.operand_align;  // the instruction's boundary
    int64_t at = (scratch_base_ + staged + align - 1) / align * align - scratch_base_;
    tile[i] = write_tile(get(v), plan_.of(v), v->type, at);
    staged = at + tile[i].bytes();
  }
  if (staged) {
    t_.async_proxy_fence(b_);
    barrier();
  }
  // Each CTA's buffers must hold what its instructions read: its rows of
  // A (all of them on one CTA) and the whole of B.
  for (int i = d.a_in_registers ? 1 : 0; i < 2; ++i) {
    const auto& full = op.operands[i]->type.shape;
    int64_t want0 = i == 0 ? full[0] / d.c.in_size(kBlock) : full[0];
    const SmemTile& t = tile[i];
    int64_t rows = t.transposed ? t.shape[1] : t.shape[0], cols = t.transposed ? t.shape[0] : t.shape[1];
    if (rows != want0 || cols != full[1])
      unsupported(op, "expects operand #" + std::to_string(i) + "'s buffer to hold " + std::to_string(want0) + "x" +
                          std::to_string(full[1]) + " of it in each CTA, found " + std::to_string(rows) + "x" +
                          std::to_string(cols) + " (a layout that splits it over the cluster otherwise)");
  }
  for (auto*& v : c) v = cast(v, acc, mi.acc, op);
  // A zero accumulator is not added: the first K step's instructions set
  // the registers (+0 and -0 alike: a sum of products is not compared by
  // the sign of an exact zero).
  const bool zero_acc = is_zero_constant(op.operands[2]);
  // This warp's group's first row: the warp bits above the group's own.
  llvm::Value* group_m = b_.getInt32(0);
  const LinearLayout& cl = d.c;
  for (const auto& in : cl.in_dims())
    if (in.name == kWarp) {
      for (size_t k = std::countr_zero(unsigned(mi.warps)); k < in.bases.size(); ++k) {
        llvm::Value* bit = b_.CreateAnd(b_.CreateLShr(warp_, b_.getInt32(int32_t(k))), b_.getInt32(1));
        group_m = b_.CreateAdd(group_m, b_.CreateMul(bit, b_.getInt32(in.bases[k][0])));
      }
      if (in.repeat > 1)  // three warpgroups: the repeat's digit above the bits
        group_m = b_.CreateAdd(group_m, b_.CreateMul(b_.CreateLShr(warp_, b_.getInt32(int32_t(in.bases.size()))),
                                                     b_.getInt32(in.repeat_stride[0])));
    }
  t_.warpgroup_fence(b_);
  int nc = mi.c.in_size(kReg);
  const Regs* a_regs = d.a_in_registers ? &get(op.operands[0]) : nullptr;
  if (a_regs && !(plan_.of(op.operands[0]) == d.a))
    throw Error("internal: " + op.loc.str() + ": 'dot' with a_in = \"registers\" expects A in its fragment layout, found " +
                op.operands[0]->type.str());
  const OperandFragments a_frags = a_regs ? operand_fragments(d, 0) : OperandFragments{};
  for (int s = 0; s < d.reps_k; ++s)
    for (int i = 0; i < d.reps_m; ++i) {
      WarpgroupA a;
      if (a_regs) {
        for (int r = 0; r < a_frags.regs; ++r) a.elems.push_back((*a_regs)[a_frags.reg(i, s, r)]);
      } else {
        int32_t m = reg_coords(cl, d.c_reg(i, 0, 0))[0];  // the instructions' first row in the group
        a.smem = operand_descriptor(tile[0], 0, group_m, m, s * mi.k);
        a.trans = !k_major(tile[0], 0);
      }
      for (int j = 0; j < d.reps_n; ++j) {
        int32_t n = reg_coords(cl, d.c_reg(i, j, 0))[1];  // and first column
        SmemOperand b_op = operand_descriptor(tile[1], 1, nullptr, n, s * mi.k);
        Regs cf(nc);
        for (int r = 0; r < nc; ++r) cf[r] = c[d.c_reg(i, j, r)];
        cf = t_.warpgroup_multiply(b_, mi, a, b_op, !k_major(tile[1], 1), cf, s > 0 || !zero_acc);
        for (int r = 0; r < nc; ++r) c[d.c_reg(i, j, r)] = cf[r];
      }
    }
  t_.warpgroup_commit(b_);
  if (async) return c;
  c = t_.warpgroup_wait(b_, 0, c);
  for (auto*& v : c) v = cast(v, mi.acc, acc, op);
  return c;
}

// dot_wait {pending}: until at most `pending` asynchronous dots of this
// warpgroup are in flight; its results are its operands' registers, which
// only then hold the dots' sums.
void Lowerer::lower_dot_wait(const Op& op) {
  Regs all;
  for (const ir::Value* v : op.operands) {
    const Regs& r = get(v);
    all.insert(all.end(), r.begin(), r.end());
  }
  all = t_.warpgroup_wait(b_, int(op.attr_int("pending")), all, op.attr_int_or("pinned", 0) != 0);
  size_t at = 0;
  for (size_t i = 0; i < op.operands.size(); ++i) {
    size_t n = get(op.operands[i]).size();
    vals_[op.result(int(i))] = Regs(all.begin() + long(at), all.begin() + long(at + n));
    at += n;
  }
}

// Whether operand `i` (0: A [M, K], 1: B [K, N]) is stored with K
// contiguous.
bool Lowerer::k_major(const SmemTile& t, int i) {
  int view_contig = t.transposed ? 1 - t.contiguous : t.contiguous;
  return view_contig == (i == 0 ? 1 : 0);
}

// Operand `i` of a warpgroup instruction, as the target describes it
// (warpgroup_operand): the part it reads, rows from `mn0` + `mn0_c` along
// M (A) or N (B) (`mn0` a run-time part, or null) and K from `k0`, of a
// stored tile of swizzled panels (SmemTile) `row_bytes` wide and `rows`
// high. What is constant goes into the operand's offset, so that the
// instructions of one product share the descriptor of one address.
SmemOperand Lowerer::operand_descriptor(const SmemTile& t, int i, llvm::Value* mn0, int64_t mn0_c, int64_t k0) {
  int64_t panel = t.panel_elems(), row_bytes = panel * t.elem_bytes;
  int64_t rows = t.shape[1 - t.contiguous];  // stored rows (a panel's height)
  llvm::Value* addr = b_.CreatePtrToInt(t.base, b_.getInt32Ty());
  int64_t offset;
  if (k_major(t, i)) {
    // Rows are M (N); K runs along the panel rows: the instruction's K
    // columns start k0 elements into panel k0 / panel.
    if (mn0) addr = b_.CreateAdd(addr, b_.CreateMul(mn0, b_.getInt32(int32_t(row_bytes))));
    offset = mn0_c * row_bytes + (k0 / panel) * rows * row_bytes + (k0 % panel) * t.elem_bytes;
  } else {
    // Rows are K; M (N) runs along the panel rows, from panel mn0 / panel.
    offset = k0 * row_bytes;
    if (mn0) {
      llvm::Value* p = b_.CreateUDiv(b_.CreateAdd(mn0, b_.getInt32(int32_t(mn0_c))), b_.getInt32(int32_t(panel)));
      addr = b_.CreateAdd(addr, b_.CreateMul(p, b_.getInt32(int32_t(rows * row_bytes))));
    } else {
      offset += mn0_c / panel * rows * row_bytes;
    }
  }
  return {t_.warpgroup_operand(b_, addr, row_bytes, rows * row_bytes, k_major(t, i)), offset};
}

// Where operand `i` of a matrix-unit dot can be read with matrix loads:
// a pipeline's buffer, or a scratch tile it is written to now (at byte
// `staged` of the scratch region, which advances; the caller emits the
// barrier). nullopt: the operand comes in registers.
std::optional<SmemTile> Lowerer::smem_source(const Op& dot, int i, int64_t& staged) {
  const ir::Value* v = dot.operands[i];
  if (auto it = smem_vals_.find(v); it != smem_vals_.end()) return it->second;
  if (!t_.has_matrix_load_8x8 || !staged_for_matrix_loads(dot, i, v, plan_)) return std::nullopt;
  if (staged == 0) scratch_fence();  // the op's earlier scratch use is done
  SmemTile t = write_tile(get(v), plan_.of(v), v->type, staged);
  staged += (t.bytes() + 127) / 128 * 128;
  return t;
}

// Operand `i` of a dot in its fragment layout: from shared memory when a
// pipeline left it there, else written to shared memory and read back with
// matrix loads (or converted generically); one converted before its loop
// (convert_layouts.h) is in that layout already.
Regs Lowerer::dot_operand(const Op& dot, int i) {
  const DotLayouts& d = plan_.dots.at(&dot);
  int64_t staged = 0;
  if (auto t = smem_source(dot, i, staged)) {
    if (staged) barrier();
    return all_fragments(*t, operand_fragments(d, i), value_type(dot.operands[0]->type));
  }
  // Registers already in the fragment layout's threads (a dot's result
  // feeding the next) are only permuted.
  const ir::Value* v = dot.operands[i];
  return convert_or_remat(v, get(v), i == 0 ? d.a : d.b);
}

// Byte offset in a tile of the element at (runtime) coordinates of the
// value's view.
llvm::Value* Lowerer::tile_offset(const SmemTile& t, llvm::Value* v0, llvm::Value* v1) {
  llvm::Value* s0 = t.transposed ? v1 : v0;
  llvm::Value* s1 = t.transposed ? v0 : v1;
  llvm::Value* row = t.contiguous == 1 ? s0 : s1;
  llvm::Value* col = t.contiguous == 1 ? s1 : s0;
  int64_t cols = t.panel_elems(), rows = t.shape[1 - t.contiguous];
  bool panels = cols < t.shape[t.contiguous];
  llvm::Value* phase = b_.CreateURem(b_.CreateUDiv(row, b_.getInt32(t.per_phase)), b_.getInt32(t.max_phase));
  llvm::Value* in_panel = panels ? b_.CreateURem(col, b_.getInt32(int32_t(cols))) : col;
  llvm::Value* chunk = b_.CreateXor(b_.CreateUDiv(in_panel, b_.getInt32(t.vec)), phase);
  llvm::Value* elem = b_.CreateAdd(b_.CreateMul(row, b_.getInt32(int32_t(cols))),
                                   b_.CreateAdd(b_.CreateMul(chunk, b_.getInt32(t.vec)),
                                                b_.CreateURem(col, b_.getInt32(t.vec))));
  if (panels)  // of `rows` x `cols`, one after the other
    elem = b_.CreateAdd(elem, b_.CreateMul(b_.CreateUDiv(col, b_.getInt32(int32_t(cols))),
                                           b_.getInt32(int32_t(rows * cols))));
  return b_.CreateMul(elem, b_.getInt32(t.elem_bytes));
}

llvm::Value* Lowerer::tile_ptr(const SmemTile& t, llvm::Value* v0, llvm::Value* v1) {
  return b_.CreateGEP(b_.getInt8Ty(), t.base, b_.CreateZExt(tile_offset(t, v0, v1), b_.getInt64Ty()));
}

// Writes a register tile to scratch shared memory (swizzled) at byte
// `offset` of the scratch region; readers need a barrier after it. On a
// cluster, the CTA's part of it (cta_shape).
SmemTile Lowerer::write_tile(const Regs& regs, const LinearLayout& l, const ir::Type& type, int64_t offset) {
  int bytes = byte_size(type.dtype);
  int cd = contiguous_dim(l);
  const std::vector<int64_t> part = cta_shape(l, type.shape);
  SmemTile t = SmemTile::plan(part[0], part[1], cd, bytes);
  need_smem(offset + t.bytes());
  t.base = smem_ptr(b_.getInt64(offset));
  auto hw = part_coords(l, type.shape, part);
  auto dup = duplicate_regs(l);
  int run = std::max(1, std::min<int>(l.contiguous_run(kReg, cd), t.vec));
  llvm::Type* ety = value_type(type);
  for (int r = 0; r < num_regs(l); r += run) {
    if (dup[r]) continue;
    auto c = reg_coords(l, r);
    llvm::Value* v0 = b_.CreateXor(hw[0], b_.getInt32(c[0]));
    llvm::Value* v1 = b_.CreateXor(hw[1], b_.getInt32(c[1]));
    llvm::Value* val = regs[r];
    if (run > 1) {
      val = llvm::UndefValue::get(llvm::FixedVectorType::get(ety, run));
      for (int k = 0; k < run; ++k) val = b_.CreateInsertElement(val, regs[r + k], uint64_t(k));
    }
    b_.CreateStore(val, tile_ptr(t, v0, v1));
  }
  return t;
}

// Operand `i` of `dot` read from a tile with 8x8 matrix loads, in the
// fragment layout. Lane l addresses row l % 8 of matrix l / 8; a matrix
// row runs along the stored contiguous dimension; when that is not the
// fragment's K the load transposes.
// Only the fragments of K step `s` are read (the other registers stay
// null).
Regs Lowerer::load_fragments(const SmemTile& t, const OperandFragments& f, int s, llvm::Type* ety) {
  const LinearLayout& l = f.layout;
  const int i = f.operand;
  int k_dim = i == 0 ? 1 : 0;
  int view_contig = t.transposed ? 1 - t.contiguous : t.contiguous;
  bool trans = view_contig != k_dim;
  int walk = 1 - view_contig;  // lane % 8 walks the stored rows
  // This lane's coordinates within a fragment group: the warp's origin,
  // the matrix's corner, the row.
  auto warp_origin = hw_coords_of(l, kWarp);
  llvm::Value* q = b_.CreateLShr(lane_, 3);
  llvm::Value* r8 = b_.CreateAnd(lane_, 7);
  // Matrix q's corner: for A (m + 8 (q & 1), k + 8 (q >> 1)); for B
  // (k + 8 (q & 1), n + 8 (q >> 1)) spanning two n fragments.
  llvm::Value* lo = b_.CreateMul(b_.CreateAnd(q, 1), b_.getInt32(8));
  llvm::Value* hi = b_.CreateMul(b_.CreateLShr(q, 1), b_.getInt32(8));
  llvm::Value* base0 = b_.CreateAdd(warp_origin[0], lo);
  llvm::Value* base1 = b_.CreateAdd(warp_origin[1], hi);
  if (walk == 0) base0 = b_.CreateAdd(base0, r8);
  else base1 = b_.CreateAdd(base1, r8);
  Regs out(num_regs(l));
  auto unpack = [&](llvm::Value* word, int reg0, int reg1) {
    llvm::Value* v = b_.CreateBitCast(word, llvm::FixedVectorType::get(ety, 2));
    out[reg0] = b_.CreateExtractElement(v, uint64_t(0));
    out[reg1] = b_.CreateExtractElement(v, uint64_t(1));
  };
  int outer = f.reps_outer;
  for (int o = 0; o < outer; o += (i == 0 ? 1 : 2)) {
      int reg0 = f.reg(o, s, 0);
      auto corner = reg_coords(l, reg0);
      llvm::Value* p = tile_ptr(t, b_.CreateAdd(base0, b_.getInt32(corner[0])),
                                b_.CreateAdd(base1, b_.getInt32(corner[1])));
      bool pair = i == 1 && o + 1 < outer;
      int count = i == 0 || pair ? 4 : 2;
      Regs words = t_.load_matrix_8x8(b_, p, count, trans);
      for (int w = 0; w < count; ++w) {
        int frag = i == 0 ? o : o + (w >> 1);
        int r = i == 0 ? 2 * w : 2 * (w & 1);
        int reg = f.reg(frag, s, r);
        unpack(words[w], reg, reg + 1);
      }
    }
  return out;
}

// Without a matrix instruction: every thread owns its C elements and
// holds the rows of A and columns of B they need; products accumulate in
// K order with fused multiply-adds (f32, or f64 for f64 inputs).
Regs Lowerer::fma_dot(const Op& op, const DotLayouts& d, const Regs& a, const Regs& bm, Regs c) {
  DType in = op.operands[0]->type.dtype, acc = op.result()->type.dtype;
  int64_t K = op.operands[0]->type.shape[1];
  bool int_dot = !is_float(in);
  DType work = int_dot ? DType::i32 : in == DType::f64 || acc == DType::f64 ? DType::f64 : DType::f32;
  std::map<LinearLayout::Coords, int> a_at, b_at;
  for (int r = 0; r < num_regs(d.a); ++r) a_at.emplace(reg_coords(d.a, r), r);
  for (int r = 0; r < num_regs(d.b); ++r) b_at.emplace(reg_coords(d.b, r), r);
  for (int r = 0; r < num_regs(d.c); ++r) {
    auto mn = reg_coords(d.c, r);
    llvm::Value* sum = cast(c[r], acc, work, op);
    for (int32_t k = 0; k < K; ++k) {
      llvm::Value* x = cast(a[a_at.at({mn[0], k})], in, work, op);
      llvm::Value* y = cast(bm[b_at.at({k, mn[1]})], in, work, op);
      sum = int_dot ? b_.CreateAdd(b_.CreateMul(x, y), sum)
                    : b_.CreateIntrinsic(llvm::Intrinsic::fma, {x->getType()}, {x, y, sum});
    }
    c[r] = cast(sum, work, acc, op);
  }
  return c;
}

// Every K step's fragments of one operand, read from `t`.
Regs Lowerer::all_fragments(const SmemTile& t, const OperandFragments& f, llvm::Type* ety) {
  Regs out(num_regs(f.layout));
  for (int s = 0; s < f.reps_k; ++s) {
    Regs part = load_fragments(t, f, s, ety);
    for (size_t r = 0; r < out.size(); ++r)
      if (part[r]) out[r] = part[r];
  }
  return out;
}

// A convert_layout {move = "matrix_loads", instr, operand}
// (convert_layouts.h): the tile written to swizzled shared memory at the
// op's scratch and read back with matrix loads, in the fragments of operand
// `operand` of a dot on `instr` (the result's layout).
void Lowerer::lower_matrix_loads(const Op& conv) {
  const ir::Value* v = conv.operands[0];
  const ir::Type& type = conv.result()->type;
  const std::string name = conv.attr_str_or("instr", "");
  std::optional<MatrixInstr> mi = matrix_instr_named(t_, type.dtype, name);
  if (!mi || !t_.has_matrix_load_8x8 || mi->k != 16 || byte_size(type.dtype) != 2)
    unsupported(conv, "with move = \"matrix_loads\" expects 'instr' naming a k = 16 instruction for " +
                          std::string(dtype_name(type.dtype)) + " that " + t_.name +
                          " reads with 8x8 matrix loads, found \"" + name + "\"");
  int i = int(conv.attr_int_or("operand", 0));
  std::optional<OperandFragments> f = operand_fragments(*mi, plan_.of(conv.result()), i, type.shape);
  if (!f)
    unsupported(conv, "with move = \"matrix_loads\" expects a result in the fragments of operand " +
                          std::to_string(i) + " of " + name + ", found a layout of other registers or lanes");
  SmemTile t = write_tile(get(v), plan_.of(v), v->type, 0);
  barrier();
  vals_[conv.result()] = all_fragments(t, *f, value_type(type));
}

}  // namespace tl::codegen::lowering
