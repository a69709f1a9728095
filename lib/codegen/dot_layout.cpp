// Tiled layouts of dot (see dot_layout.h): the back end's fragment layouts
// repeated in registers, then spread over warps.
#include "codegen/dot_layout.h"

#include <bit>

#include "codegen/assign_layouts.h"

namespace tl::codegen {

namespace {
int32_t i32(int64_t v) { return int32_t(v); }
}  // namespace

int DotLayouts::c_reg(int i, int j, int r) const {
  return r + instr->c.in_size(kReg) * (j + reps_n * i);
}

OperandFragments operand_fragments(const DotLayouts& d, int i) {
  const LinearLayout& frag = i == 0 ? d.instr->a : d.instr->b;
  return {i == 0 ? d.a : d.b, i, frag.in_size(kReg), d.reps_k, i == 0 ? d.reps_m : d.reps_n};
}

std::optional<OperandFragments> operand_fragments(const MatrixInstr& instr, const LinearLayout& layout, int i,
                                                  const std::vector<int64_t>& shape) {
  const LinearLayout& frag = i == 0 ? instr.a : instr.b;
  int k_dim = i == 0 ? 1 : 0;
  if (shape.size() != 2 || shape[k_dim] % instr.k != 0) return std::nullopt;
  OperandFragments f{layout, i, frag.in_size(kReg), int(shape[k_dim] / instr.k), 1};
  if (layout.in_size(kReg) % (f.regs * f.reps_k) != 0) return std::nullopt;
  f.reps_outer = layout.in_size(kReg) / (f.regs * f.reps_k);
  // The register and lane bits must be the fragment's, then the repeats.
  using L = LinearLayout;
  L want = frag * L::repeat(kReg, f.reps_k, dim_name(k_dim)) * L::identity(kReg, f.reps_outer, dim_name(1 - k_dim));
  for (const std::string& in : {kReg, kLane}) {
    if (layout.in_size(in) != want.in_size(in)) return std::nullopt;
    for (int32_t bit = 1; bit < layout.in_size(in); bit <<= 1)
      if (layout.apply({{in, bit}}) != want.apply({{in, bit}})) return std::nullopt;
  }
  return f;
}

bool fits(const MatrixInstr& instr, int64_t M, int64_t N, int64_t K) {
  return M % instr.m == 0 && N % instr.n == 0 && K % instr.k == 0;
}

namespace {
// A warpgroup instruction: instr.c (and instr.a) already cover its warps;
// the groups go along M, above the instruction's repeats.
DotLayouts warpgroup_dot_layouts(const MatrixInstr& instr, int64_t M, int64_t N, int64_t K, int num_warps,
                                 bool a_in_registers, int num_ctas) {
  using L = LinearLayout;
  DotLayouts d;
  d.instr = instr;
  int groups = num_warps / instr.warps;
  d.warps_m = num_warps;
  const int64_t m_cta = M / num_ctas;  // the rows of C a CTA computes
  d.reps_m = int(m_cta / (int64_t(instr.m) * groups));
  d.reps_n = int(N / instr.n);
  d.reps_k = int(K / instr.k);
  const std::string d0 = dim_name(0), d1 = dim_name(1);
  // The CTAs of a cluster above the warps along M; B whole in each.
  // Three warpgroups (12 warps) repeat along M.
  d.c = instr.c * L::identity(kReg, d.reps_n, d1) * L::identity(kReg, d.reps_m, d0) * L::repeat(kWarp, groups, d0);
  if (num_ctas > 1) d.c = d.c * L::identity(kBlock, num_ctas, d0);
  d.a = default_layout({M, K}, 8, num_warps, 32, -1, num_ctas);
  d.b = default_layout({K, N}, 8, num_warps, 32);
  if (a_in_registers) {
    if (instr.a.in_dims().empty())
      throw Error("internal: " + instr.name + " takes no A operand from registers");
    d.a_in_registers = true;
    d.a = instr.a * L::repeat(kReg, d.reps_k, d1) * L::identity(kReg, d.reps_m, d0) *
          L::repeat(kWarp, groups, d0);
    if (num_ctas > 1) d.a = d.a * L::identity(kBlock, num_ctas, d0);
  }
  return d;
}
}  // namespace

int split_ctas(const MatrixInstr& instr, int64_t M, int64_t N, int64_t K, int num_warps, int num_ctas) {
  if (num_ctas <= 1 || instr.warps <= 1) return 1;
  int64_t groups = num_warps / instr.warps;
  bool even = M % (num_ctas * instr.m * groups) == 0 && fits(instr, M / num_ctas, N, K);
  return even ? num_ctas : 1;
}

DotLayouts matrix_dot_layouts(const MatrixInstr& instr, int64_t M, int64_t N, int64_t K, int num_warps,
                              bool warps_along_m, bool a_in_registers, int num_ctas) {
  if (instr.warps > 1) return warpgroup_dot_layouts(instr, M, N, K, num_warps, a_in_registers, num_ctas);
  if (num_ctas > 1) throw Error("internal: a dot split over a cluster on " + instr.name + " (warpgroup instructions only)");
  // Warps go where a warp's share is larger (square warp tiles reuse each
  // fragment of A and B most), never below one instruction per warp.
  int wm = 1, wn = 1;
  while (wm * wn < num_warps) {
    bool can_m = M / (int64_t(instr.m) * wm) >= 2, can_n = N / (int64_t(instr.n) * wn) >= 2;
    if (warps_along_m) can_n = false;
    if (!can_m && !can_n) break;
    if (can_m && (!can_n || M / wm >= N / wn)) wm *= 2;
    else wn *= 2;
  }
  int rest = num_warps / (wm * wn);  // warps beyond the tile replicate it

  DotLayouts d;
  d.instr = instr;
  d.warps_m = wm;
  d.warps_n = wn;
  d.reps_m = int(M / (int64_t(instr.m) * wm));
  d.reps_n = int(N / (int64_t(instr.n) * wn));
  d.reps_k = int(K / instr.k);
  using L = LinearLayout;
  const std::string d0 = dim_name(0), d1 = dim_name(1);
  // Register order: the fragment's own registers, then repeats along K (for
  // A and B) or N (for C), then repeats along M or N. Warp bits: M first.
  d.a = instr.a * L::identity(kReg, d.reps_k, d1) * L::identity(kReg, d.reps_m, d0) * L::identity(kWarp, wm, d0) *
        L::zeros(kWarp, wn, d1) * L::zeros(kWarp, rest, d0);
  d.b = instr.b * L::identity(kReg, d.reps_k, d0) * L::identity(kReg, d.reps_n, d1) * L::zeros(kWarp, wm, d0) *
        L::identity(kWarp, wn, d1) * L::zeros(kWarp, rest, d0);
  d.c = instr.c * L::identity(kReg, d.reps_n, d1) * L::identity(kReg, d.reps_m, d0) * L::identity(kWarp, wm, d0) *
        L::identity(kWarp, wn, d1) * L::zeros(kWarp, rest, d0);
  return d;
}

DotLayouts fma_dot_layouts(int64_t M, int64_t N, int64_t K, int num_warps, int warp_size) {
  DotLayouts d;
  d.c = default_layout({M, N}, 1, num_warps, warp_size);
  // A keeps C's rows (its column bits become broadcast), B its columns; both
  // add registers walking all of K, first.
  auto operand = [&](int keep, int64_t rows, int64_t cols, int k_dim) {
    std::vector<LinearLayout::InDim> ins;
    LinearLayout::InDim reg{kReg, {}};
    for (int64_t bit = 1; bit < K; bit <<= 1) {
      LinearLayout::Coords c(2, 0);
      c[k_dim] = i32(bit);
      reg.bases.push_back(c);
    }
    auto project = [&](const LinearLayout::Coords& c) {
      LinearLayout::Coords r(2, 0);
      r[1 - k_dim] = c[keep];
      return r;
    };
    for (const auto& in : d.c.in_dims()) {
      if (in.name == kReg) {
        for (const auto& b : in.bases) reg.bases.push_back(project(b));
        continue;
      }
      LinearLayout::InDim n{in.name, {}};
      for (const auto& b : in.bases) n.bases.push_back(project(b));
      ins.push_back(std::move(n));
    }
    ins.insert(ins.begin(), std::move(reg));
    return LinearLayout(std::move(ins), {{dim_name(0), i32(rows)}, {dim_name(1), i32(cols)}}).remove_broadcast(kReg);
  };
  d.a = operand(0, M, K, 1);
  d.b = operand(1, K, N, 0);
  return d;
}

int warpgroup_instr_registers(const DotLayouts& d) {
  const MatrixInstr& mi = *d.instr;
  auto regs32 = [](int elems, DType t) { return (elems * bit_width(t) + 31) / 32; };
  constexpr int kBeside = 26;  // descriptors, predicates and addresses, as ptxas counts them
  int need = regs32(mi.c.in_size(kReg), mi.acc) + kBeside;
  if (d.a_in_registers) need += regs32(mi.a.in_size(kReg), mi.in);
  return need;
}

std::string warpgroup_register_shortfall(const DotLayouts& d, int entry, int threads) {
  int need = warpgroup_instr_registers(d);
  if (need <= entry) return "";
  return "issues " + d.instr->name + ", which needs about " + std::to_string(need) +
         " registers a thread at the kernel's entry, and a thread of " + std::to_string(threads) + " has " +
         std::to_string(entry) + " (ptxas counts a warpgroup product against the entry's registers, whatever "
         "setmaxnreg adds later): fewer warps or a narrower tile along N";
}

}  // namespace tl::codegen
