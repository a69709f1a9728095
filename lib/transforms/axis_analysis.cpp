// Axis analysis (see axis_analysis.h): one forward walk with a transfer
// function per op. Values it cannot reason about get the pessimistic answer
// (runs of 1, divisibility 1), which only costs vector width, never
// correctness. Loop-carried values get the facts that hold on entry and
// survive an iteration (run_loop).
#include "transforms/axis_analysis.h"

#include <algorithm>
#include <bit>
#include <functional>
#include <numeric>

namespace tl::transforms {

namespace {
constexpr int64_t kMaxDiv = int64_t(1) << 30;

int64_t gcd(int64_t a, int64_t b) { return std::gcd(a, b); }
int64_t cap(int64_t v) { return std::min(v, kMaxDiv); }

// Dimensions of a value as the analysis sees them (a scalar is one element).
std::vector<int64_t> dims(const ir::Type& t) { return t.is_scalar() ? std::vector<int64_t>{1} : t.shape; }

bool is_tracked(const ir::Type& t) { return t.is_ptr || is_int(t.dtype); }

AxisInfo constant_info(const std::vector<int64_t>& shape, int64_t value) {
  AxisInfo a;
  a.contiguity.assign(shape.size(), 1);
  a.divisibility.assign(shape.size(), highest_pow2_divisor(value));
  a.constancy = shape;
  a.value = value;
  return a;
}
}  // namespace

int64_t highest_pow2_divisor(int64_t v) {
  if (v == 0) return kMaxDiv;
  return cap(int64_t(1) << std::countr_zero(uint64_t(v)));
}

AxisInfo AxisInfo::unknown(int rank) {
  AxisInfo a;
  a.contiguity.assign(rank, 1);
  a.divisibility.assign(rank, 1);
  a.constancy.assign(rank, 1);
  return a;
}

// `assume (cmp eq (rem x, c), 0)` or `assume (cmp eq (and x, c - 1), 0)`
// (either operand order), c a constant power of two: x is divisible by c.
void AxisAnalysis::find_assumptions(const ir::Region& r) {
  auto constant = [](const ir::Value* v) -> std::optional<int64_t> {
    if (!v->def || v->def->kind != ir::OpKind::Constant) return std::nullopt;
    const auto& a = v->def->attrs.at("value");
    if (!std::holds_alternative<int64_t>(a)) return std::nullopt;
    return std::get<int64_t>(a);
  };
  for (const auto& op : r.ops) {
    for (const auto& sub : op->regions) find_assumptions(*sub);
    if (op->kind != ir::OpKind::Assume) continue;
    const ir::Op* cmp = op->operands[0]->def;
    if (!cmp || cmp->kind != ir::OpKind::Cmp || cmp->attr_str_or("pred", "") != "eq") continue;
    for (int side = 0; side < 2; ++side) {
      const ir::Op* lhs = cmp->operands[side]->def;
      auto zero = constant(cmp->operands[1 - side]);
      if (!lhs || !zero || *zero != 0 || lhs->operands.size() != 2) continue;
      auto c = constant(lhs->operands[1]);
      if (!c || *c <= 0) continue;
      int64_t divisor = lhs->kind == ir::OpKind::Rem && std::has_single_bit(uint64_t(*c))   ? *c
                        : lhs->kind == ir::OpKind::And && std::has_single_bit(uint64_t(*c + 1)) ? *c + 1
                                                                                                : 0;
      if (divisor > 1) {
        int64_t& d = assumed_divisor_[lhs->operands[0]];
        d = std::max(d, std::min(divisor, kMaxDiv));
      }
    }
  }
}

void AxisAnalysis::with_assumptions(const ir::Value* v, AxisInfo& a) const {
  auto it = assumed_divisor_.find(v);
  if (it == assumed_divisor_.end()) return;
  for (auto& d : a.divisibility) d = std::max(d, it->second);
}

AxisAnalysis::AxisAnalysis(const ir::Function& fn, const std::vector<ArgFacts>& args) {
  find_assumptions(fn.body);
  for (const auto& arg : fn.body.args) {
    // Kernel arguments are scalars; IR text may pass a tile, of which
    // nothing is known.
    AxisInfo a = AxisInfo::unknown(int(dims(arg->type).size()));
    if (arg->type.is_scalar() && size_t(arg->index) < args.size()) {
      const auto& f = args[arg->index];
      a.divisibility[0] = f.divisibility;
      if (f.value) a = constant_info({1}, *f.value);
    }
    with_assumptions(arg.get(), a);
    info_[arg.get()] = a;
  }
  std::function<void(const ir::Region&)> run = [&](const ir::Region& r) {
    for (const auto& op : r.ops) {
      if (op->kind == ir::OpKind::For) {
        run_loop(*op, run);
      } else {
        for (const auto& sub : op->regions) {
          // Other region arguments (reduce/scan combiners) are scalars.
          for (const auto& a : sub->args) info_[a.get()] = AxisInfo::unknown(int(dims(a->type).size()));
          run(*sub);
        }
      }
      visit(*op);
    }
  };
  run(fn.body);
}

namespace {
// Weakens `a` to what also holds of `b` (per dimension, the gcd of each
// fact); true if `a` changed.
bool meet(AxisInfo& a, const AxisInfo& b) {
  bool changed = false;
  auto meet_one = [&](std::vector<int64_t>& x, const std::vector<int64_t>& y) {
    for (size_t d = 0; d < x.size() && d < y.size(); ++d) {
      int64_t m = gcd(x[d], y[d]);
      if (m != x[d]) x[d] = m, changed = true;
    }
  };
  meet_one(a.contiguity, b.contiguity);
  meet_one(a.divisibility, b.divisibility);
  meet_one(a.constancy, b.constancy);
  return changed;
}
}  // namespace

// A loop's carried values start as their initial values' facts; the body
// runs, and each fact is met with what the yield produces (the weaker of
// the two) until nothing changes. `p += BLOCK` keeps a pointer tile's
// contiguity and alignment this way. The induction variable keeps the
// divisibility of its start and step.
//
// An inner loop runs again on each round of the loop around it. It starts
// from the facts it settled on last time (met with the new initial values),
// not from the initial values alone: facts only weaken from round to round,
// so each later run settles at once unless something did weaken. Starting
// afresh each time made nested loops cost a product of their rounds,
// exponential in the depth. Any start below the initial values is sound,
// because a loop settles only on facts its own yield preserves.
void AxisAnalysis::run_loop(const ir::Op& loop, const std::function<void(const ir::Region&)>& run) {
  const ir::Region& body = *loop.regions[0];
  auto& iv = info_[body.args[0].get()];
  iv = AxisInfo::unknown(1);
  iv.divisibility[0] = std::min(get(loop.operands[0]).divisibility[0], get(loop.operands[2]).divisibility[0]);
  std::vector<AxisInfo>& settled = settled_[&loop];
  std::vector<AxisInfo> carried;
  for (size_t k = 0; k + 1 < body.args.size(); ++k) {
    AxisInfo init = get(loop.operands[3 + k]);
    init.value.reset();  // a constant start does not stay constant
    if (k < settled.size()) meet(init, settled[k]);
    carried.push_back(init);
  }
  const ir::Op* yield = body.terminator();
  for (int round = 0; round < 4; ++round) {
    for (size_t k = 0; k < carried.size(); ++k) info_[body.args[k + 1].get()] = carried[k];
    run(body);
    bool changed = false;
    for (size_t k = 0; k < carried.size() && yield; ++k) changed |= meet(carried[k], get(yield->operands[k]));
    if (!changed) {
      settled = std::move(carried);
      return;
    }
  }
  // Not settled after a few rounds: fall back to knowing nothing.
  for (size_t k = 0; k < carried.size(); ++k) {
    carried[k] = AxisInfo::unknown(carried[k].rank());
    info_[body.args[k + 1].get()] = carried[k];
  }
  settled = std::move(carried);
  run(body);
}

const AxisInfo& AxisAnalysis::get(const ir::Value* v) const {
  auto it = info_.find(v);
  if (it != info_.end()) return it->second;
  static thread_local AxisInfo none;
  none = AxisInfo::unknown(int(dims(v->type).size()));
  return none;
}

void AxisAnalysis::visit(const ir::Op& op) {
  using K = ir::OpKind;
  for (const auto& res : op.results) {
    if (!is_tracked(res->type)) continue;
    auto shape = dims(res->type);
    int rank = int(shape.size());
    AxisInfo out = AxisInfo::unknown(rank);
    auto in = [&](int i) -> const AxisInfo& { return get(op.operands[i]); };
    switch (op.kind) {
      case K::Constant:
        if (std::holds_alternative<int64_t>(op.attrs.at("value")))
          out = constant_info(shape, std::get<int64_t>(op.attrs.at("value")));
        break;
      case K::Arange: {
        int64_t start = op.attr_int("start");
        out.contiguity[0] = shape[0];
        out.divisibility[0] = highest_pow2_divisor(start);
        break;
      }
      case K::ConvertLayout:  // the same values, held elsewhere
        out = in(0);
        break;
      case K::Hint: {  // the same values, with what their author promises (ops.def)
        out = in(0);
        for (const char* key : {"contiguity", "divisibility"}) {
          if (!op.has_attr(key)) continue;
          auto& facts = std::string(key) == "contiguity" ? out.contiguity : out.divisibility;
          const auto& promised = op.attr_ints(key);
          for (size_t d = 0; d < facts.size() && d < promised.size(); ++d) facts[d] = std::max(facts[d], promised[d]);
        }
        break;
      }
      case K::LocalLoad: {  // what a local_alloc wrote, read back
        const ir::Op* alloc = op.operands[0]->def;
        if (alloc && alloc->kind == K::LocalAlloc && !alloc->operands.empty()) out = get(alloc->operands[0]);
        break;
      }
      case K::Splat:
        out.divisibility.assign(rank, in(0).divisibility[0]);
        out.constancy = shape;
        out.value = in(0).value;
        break;
      case K::Broadcast: {
        const auto& a = in(0);
        auto src = dims(op.operands[0]->type);
        out = a;
        for (int d = 0; d < rank; ++d)
          if (src[d] == 1 && shape[d] != 1) out.contiguity[d] = 1, out.constancy[d] = shape[d];
        break;
      }
      case K::ExpandDims: {
        const auto& a = in(0);
        int axis = int(op.attr_int("axis"));
        out = a;
        if (op.operands[0]->type.is_scalar()) out = AxisInfo::unknown(0), out.value = a.value;
        // Along the new size-1 axis every element starts a run, so only what
        // divides every element holds: 1 past any contiguous run.
        int64_t every = kMaxDiv;
        for (int d = 0; d < a.rank(); ++d) every = std::min(every, a.contiguity[d] > 1 ? 1 : a.divisibility[d]);
        out.contiguity.insert(out.contiguity.begin() + axis, 1);
        out.divisibility.insert(out.divisibility.begin() + axis, every);
        out.constancy.insert(out.constancy.begin() + axis, 1);
        break;
      }
      case K::Trans: {
        const auto& a = in(0);
        const auto& order = op.attr_ints("order");
        for (int d = 0; d < rank; ++d) {
          out.contiguity[d] = a.contiguity[order[d]];
          out.divisibility[d] = a.divisibility[order[d]];
          out.constancy[d] = a.constancy[order[d]];
        }
        break;
      }
      case K::Add:
      case K::Sub:
      case K::AddPtr: {
        const auto& a = in(0);
        const auto& b = in(1);
        // Pointer divisibility is in bytes: scale the offset's.
        int64_t scale = op.kind == K::AddPtr ? byte_size(res->type.dtype) : 1;
        for (int d = 0; d < rank; ++d) {
          int64_t c = gcd(a.contiguity[d], b.constancy[d]);
          if (op.kind != K::Sub) c = std::max(c, gcd(a.constancy[d], b.contiguity[d]));
          out.contiguity[d] = c;
          out.divisibility[d] = cap(std::min(a.divisibility[d], cap(b.divisibility[d] * scale)));
          out.constancy[d] = gcd(a.constancy[d], b.constancy[d]);
        }
        if (a.value && b.value && op.kind != K::AddPtr)
          out.value = op.kind == K::Add ? *a.value + *b.value : *a.value - *b.value;
        break;
      }
      case K::Mul: {
        const auto& a = in(0);
        const auto& b = in(1);
        for (int d = 0; d < rank; ++d) {
          out.divisibility[d] = cap(a.divisibility[d] * b.divisibility[d]);
          out.constancy[d] = gcd(a.constancy[d], b.constancy[d]);
          if (b.value == 1) out.contiguity[d] = a.contiguity[d];
          if (a.value == 1) out.contiguity[d] = b.contiguity[d];
        }
        if (a.value && b.value) out.value = *a.value * *b.value;
        break;
      }
      case K::Div:
      case K::Rem: {
        const auto& a = in(0);
        const auto& b = in(1);
        for (int d = 0; d < rank; ++d) {
          out.constancy[d] = gcd(a.constancy[d], b.constancy[d]);
          if (!b.value || *b.value <= 0 || std::popcount(uint64_t(*b.value)) != 1) continue;
          int64_t c = *b.value;
          bool aligned = a.divisibility[d] % c == 0 || a.divisibility[d] >= kMaxDiv;
          if (op.kind == K::Div) {
            // x / c is constant over aligned runs of c consecutive values.
            if (aligned) out.constancy[d] = std::max(out.constancy[d], gcd(a.contiguity[d], c));
            out.divisibility[d] = aligned ? std::max<int64_t>(1, a.divisibility[d] / c) : 1;
          } else {
            // x % c keeps runs that do not cross a multiple of c.
            out.contiguity[d] = aligned ? gcd(a.contiguity[d], c) : 1;
            out.divisibility[d] = gcd(a.divisibility[d], c);
          }
        }
        break;
      }
      case K::Shl: {
        const auto& a = in(0);
        const auto& b = in(1);
        for (int d = 0; d < rank; ++d) {
          out.constancy[d] = gcd(a.constancy[d], b.constancy[d]);
          if (b.value && *b.value >= 0 && *b.value < 31) {
            out.divisibility[d] = cap(a.divisibility[d] << *b.value);
            if (*b.value == 0) out.contiguity[d] = a.contiguity[d];
          }
        }
        break;
      }
      case K::Cmp: {
        const auto& a = in(0);
        const auto& b = in(1);
        std::string pred = op.attr_str("pred");
        for (int d = 0; d < rank; ++d) {
          int64_t c = gcd(a.constancy[d], b.constancy[d]);
          // An aligned contiguous run compared with an aligned constant flips
          // at most at a multiple of the alignment: x < y is the same for the
          // whole run when y is a multiple of its length.
          if ((pred == "lt" || pred == "ge") && b.constancy[d] == shape[d])
            c = std::max(c, gcd(a.contiguity[d], gcd(a.divisibility[d], b.divisibility[d])));
          if ((pred == "gt" || pred == "le") && a.constancy[d] == shape[d])
            c = std::max(c, gcd(b.contiguity[d], gcd(b.divisibility[d], a.divisibility[d])));
          out.constancy[d] = c;
        }
        break;
      }
      case K::Select: {
        const auto& c = in(0);
        const auto& a = in(1);
        const auto& b = in(2);
        for (int d = 0; d < rank; ++d) {
          out.contiguity[d] = gcd(std::min(a.contiguity[d], b.contiguity[d]), c.constancy[d]);
          out.divisibility[d] = std::min(a.divisibility[d], b.divisibility[d]);
          out.constancy[d] = gcd(c.constancy[d], gcd(a.constancy[d], b.constancy[d]));
        }
        break;
      }
      case K::And:
      case K::Or:
      case K::Xor:
      case K::Minimum:
      case K::Maximum: {
        const auto& a = in(0);
        const auto& b = in(1);
        for (int d = 0; d < rank; ++d) out.constancy[d] = gcd(a.constancy[d], b.constancy[d]);
        break;
      }
      case K::Cast:
        if (is_int(op.operands[0]->type.dtype) && bit_width(res->type.dtype) >= bit_width(op.operands[0]->type.dtype))
          out = in(0);
        break;
      default:
        break;
    }
    with_assumptions(res.get(), out);
    info_[res.get()] = std::move(out);
  }
}

int AxisAnalysis::fast_dim(const ir::Op& op) const {
  const ir::Value* ptr = op.operands.at(0);
  int rank = ptr->type.rank(), best = rank - 1;
  for (int d = rank - 2; d >= 0; --d)
    if (vector_width(op, d) > vector_width(op, best)) best = d;
  return std::max(best, 0);
}

int AxisAnalysis::vector_width(const ir::Op& op, int dim) const {
  bool copy = op.kind == ir::OpKind::AsyncCopy;  // (buffer, ptr, mask)
  const ir::Value* ptr = op.operands.at(copy ? 1 : 0);
  if (ptr->type.is_scalar()) return 1;
  int last = dim < 0 ? ptr->type.rank() - 1 : dim;
  int64_t elem = byte_size(ptr->type.dtype);
  const auto& p = get(ptr);
  int64_t w = std::min<int64_t>({p.contiguity[last], std::max<int64_t>(1, p.divisibility[last] / elem), 16 / elem});
  // The mask operand: load (ptr, mask, other), store (ptr, value, mask),
  // atomic_rmw (ptr, value, mask), async_copy (buffer, ptr, mask).
  int mask_index = op.kind == ir::OpKind::Load ? 1 : 2;
  if (int(op.operands.size()) > mask_index) w = std::min(w, get(op.operands[mask_index]).constancy[last]);
  return int(std::max<int64_t>(1, std::bit_floor(uint64_t(w))));
}

}  // namespace tl::transforms
