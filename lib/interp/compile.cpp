// Compiles a Tile IR function into the interpreter's Program: assigns every
// SSA value a slot, decodes attributes once (predicates, axes, atomic kinds)
// and rejects op/dtype combinations the interpreter does not implement, so
// the per-program loop does no lookups.
#include <algorithm>
#include <optional>
#include <unordered_map>

#include "interp/element.h"

#include "interp/program.h"
#include "transforms/axis_analysis.h"
#include "transforms/passes.h"

namespace tl::interp {

namespace {

DType elem_dtype(const ir::Type& t) { return t.is_ptr ? DType::u64 : t.dtype; }

[[noreturn]] void unsupported(const ir::Op& op, const std::string& what) {
  throw Error(op.loc.str() + ": interp: '" + std::string(op.name()) + "' " + what);
}

// True if every op of the region is elementwise or a constant, so it can be
// evaluated for many lanes at once (a reduce combine over a whole tree level).
bool lane_parallel(const ir::Region& r) {
  for (const auto& op : r.ops) {
    if (!op->regions.empty()) return false;
    if (op->kind == ir::OpKind::Yield || op->kind == ir::OpKind::Constant) continue;
    if (!ir::op_is_elementwise(op->kind)) return false;
    for (const auto& res : op->results)
      if (res->type.is_tile()) return false;
  }
  return true;
}

class Compiler {
 public:
  explicit Compiler(Program& p) : prog_(p) {}

  Block block(const ir::Region& r, bool loop_body) {
    Block b;
    for (const auto& a : r.args) b.args.push_back(define(a.get()));
    for (const auto& op : r.ops) {
      if (op->kind == ir::OpKind::Yield) {
        for (auto* v : op->operands) b.yields.push_back(use(*op, v));
        if (loop_body) {
          for (auto* v : op->operands) {
            bool inner = v->def != nullptr && ir::defined_in(v, r);
            int times = int(std::count(op->operands.begin(), op->operands.end(), v));
            b.yield_swappable.push_back(inner && times == 1);
          }
        }
        continue;
      }
      b.instrs.push_back(instr(*op));
    }
    return b;
  }

 private:
  int define(const ir::Value* v) {
    int s = int(prog_.slot_types.size());
    prog_.slot_types.push_back(&v->type);
    slot_of_[v] = s;
    return s;
  }
  int use(const ir::Op& op, const ir::Value* v) {
    auto it = slot_of_.find(v);
    if (it == slot_of_.end()) unsupported(op, "uses a value that is not defined before it");
    return it->second;
  }

  Instr instr(const ir::Op& op) {
    using K = ir::OpKind;
    Instr in;
    in.kind = op.kind;
    in.op = &op;
    for (auto* v : op.operands) in.in.push_back(use(op, v));
    for (const auto& r : op.regions)
      in.regions.push_back(block(*r, ir::is_loop(op) && r == op.regions.back()));
    for (const auto& r : op.results) in.out.push_back(define(r.get()));
    if (!op.results.empty()) in.out_dtype = elem_dtype(op.results[0]->type);
    in.dtype = op.operands.empty() ? in.out_dtype : elem_dtype(op.operands[0]->type);

    auto need_operands = [&](size_t lo, size_t hi) {
      if (op.operands.size() < lo || op.operands.size() > hi)
        unsupported(op, "expects " + std::to_string(lo) + (lo == hi ? "" : ".." + std::to_string(hi)) +
                            " operands, found " + std::to_string(op.operands.size()));
    };
    auto need_results = [&](size_t n) {
      if (op.results.size() != n)
        unsupported(op, "expects " + std::to_string(n) + " results, found " + std::to_string(op.results.size()));
    };
    bool float_in = is_float(in.dtype) && !op.operands.empty() && !op.operands[0]->type.is_ptr;

    switch (op.kind) {
      case K::Constant: {
        need_results(1);
        const auto& value = op.attrs.count("value") ? op.attrs.at("value") : ir::Attr{int64_t(0)};
        if (!op.attrs.count("value")) unsupported(op, "expects attribute 'value'");
        double fv = std::holds_alternative<double>(value) ? std::get<double>(value)
                    : std::holds_alternative<int64_t>(value) ? double(std::get<int64_t>(value))
                    : (unsupported(op, "expects a numeric 'value'"), 0.0);
        if (op.results[0]->type.is_ptr || is_int(in.out_dtype)) {
          int64_t iv = std::holds_alternative<int64_t>(value) ? std::get<int64_t>(value) : int64_t(fv);
          in.int_attr = dispatch_int(in.out_dtype, iv);
        } else {
          in.float_attr = round_to(in.out_dtype, fv);
        }
        break;
      }
      case K::ProgramId: case K::NumPrograms:
        in.int_attr = op.attr_int("axis");
        if (in.int_attr < 0 || in.int_attr > 2) unsupported(op, "axis must be 0, 1 or 2, found " + std::to_string(in.int_attr));
        break;
      case K::Arange: in.int_attr = op.attr_int("start"); break;
      case K::Trans: in.ints = op.attr_ints("order"); break;
      case K::Split: need_results(2); break;
      case K::Cmp: {
        static const char* names[] = {"eq", "ne", "lt", "le", "gt", "ge"};
        const std::string& p = op.attr_str("pred");
        int k = 0;
        while (k < 6 && p != names[k]) ++k;
        if (k == 6) unsupported(op, "has an unknown predicate '" + p + "'");
        in.int_attr = k;
        break;
      }
      case K::And: case K::Or: case K::Xor: case K::Shl: case K::Shr: case K::Not: case K::MulHi:
        if (float_in) unsupported(op, "is an integer op, found operands of " + op.operands[0]->type.str());
        break;
      case K::Exp: case K::Exp2: case K::Log: case K::Log2: case K::Sqrt: case K::Rsqrt: case K::Sin:
      case K::Cos: case K::Tanh: case K::Erf: case K::Floor: case K::Ceil: case K::Fma:
        if (!float_in) unsupported(op, "is a float op, found operands of " + op.operands[0]->type.str());
        break;
      case K::Hint: {
        // The promise as the compiler reads it (ops.def): runs as long as
        // the axis analysis finds for the result, the promised divisor at
        // each run's start; checked on every run of the op.
        if (!axis_) axis_.emplace(*prog_.fn);
        const ir::Type& t = op.results[0]->type;
        size_t rank = size_t(std::max(1, t.rank()));
        const auto& facts = axis_->get(op.results[0].get());
        in.ints.assign(2 * rank, 1);
        std::vector<int64_t> div = op.has_attr("divisibility") ? op.attr_ints("divisibility") : std::vector<int64_t>{};
        for (size_t d = 0; d < rank; ++d) {
          if (t.rank() > 0 && d < facts.contiguity.size()) in.ints[d] = facts.contiguity[d];
          if (d < div.size()) in.ints[rank + d] = div[d];
        }
        in.int_attr = t.is_ptr ? byte_size(t.dtype) : 1;
        break;
      }
      case K::Bitcast:
        if (bit_width(in.dtype) != bit_width(in.out_dtype))
          unsupported(op, "needs equal bit widths, found " + op.operands[0]->type.str() + " to " +
                              op.results[0]->type.str());
        break;
      case K::AddPtr:
        if (!op.operands[0]->type.is_ptr) unsupported(op, "expects a pointer, found " + op.operands[0]->type.str());
        in.int_attr = byte_size(op.operands[0]->type.dtype);
        break;
      case K::Reduce: case K::Scan:
        in.int_attr = op.attr_int("axis");
        if (in.int_attr < 0 || in.int_attr >= op.operands[0]->type.rank())
          unsupported(op, "axis " + std::to_string(in.int_attr) + " is out of range for " + op.operands[0]->type.str());
        if (op.kind == K::Scan) in.ints = {op.attr_int_or("reverse", 0)};
        in.flag = lane_parallel(*op.regions.at(0));
        break;
      case K::Dot: {
        need_operands(3, 3);
        std::string prec = op.attr_str_or("input_precision", "ieee");
        if (prec != "ieee" && prec != "tf32") unsupported(op, "has an unknown input_precision '" + prec + "'");
        in.flag = prec == "tf32" && op.operands[0]->type.dtype == DType::f32;
        DType a = op.operands[0]->type.dtype, b = op.operands[1]->type.dtype;
        if (is_float(a) != is_float(b) || is_float(a) != is_float(in.out_dtype))
          unsupported(op, "mixes integer and float operands: " + op.operands[0]->type.str() + ", " +
                              op.operands[1]->type.str() + " -> " + op.results[0]->type.str());
        break;
      }
      case K::Load: case K::Store: case K::AtomicRmw: case K::AtomicCas:
        if (!op.operands[0]->type.is_ptr) unsupported(op, "expects pointers, found " + op.operands[0]->type.str());
        in.dtype = op.operands[0]->type.dtype;
        if (op.kind == K::Load) need_operands(1, 3);
        if (op.kind == K::Store) need_operands(2, 3);
        if (op.kind == K::AtomicCas) need_operands(3, 3);
        if (op.kind == K::AtomicRmw) {
          need_operands(2, 3);
          static const char* names[] = {"add", "max", "min", "xchg", "and", "or", "xor"};
          const std::string& k = op.attr_str("kind");
          int idx = 0;
          while (idx < 7 && k != names[idx]) ++idx;
          if (idx == 7) unsupported(op, "has an unknown kind '" + k + "'");
          if (idx >= 4 && is_float(in.dtype)) unsupported(op, "'" + k + "' needs integers, found " + op.operands[0]->type.str());
          in.int_attr = idx;
        }
        break;
      case K::For:
        need_operands(3, SIZE_MAX);
        if (in.regions.size() != 1) unsupported(op, "expects one region");
        if (in.regions[0].args.size() != op.operands.size() - 2 || in.regions[0].yields.size() != op.results.size())
          unsupported(op, "region arguments or yields do not match its carried values");
        break;
      case K::InlineAsm:
        unsupported(op, "is GPU assembly (PTX or AMDGCN text), which the interpreter cannot run; launch the kernel on a "
                        "GPU");
      case K::While:
        if (in.regions.size() != 2) unsupported(op, "expects two regions");
        if (in.regions[0].args.size() != op.operands.size() || in.regions[1].args.size() != op.operands.size() ||
            in.regions[0].yields.size() != 1 || in.regions[1].yields.size() != op.results.size() ||
            op.results.size() != op.operands.size())
          unsupported(op, "region arguments or yields do not match its carried values");
        break;
      case K::If:
        if (in.regions.size() != 2) unsupported(op, "expects two regions");
        for (auto& r : in.regions)
          if (r.yields.size() != op.results.size() && !(op.results.empty()))
            unsupported(op, "region yields " + std::to_string(r.yields.size()) + " values for " +
                                std::to_string(op.results.size()) + " results");
        break;
      default: break;
    }
    return in;
  }

  static int64_t dispatch_int(DType t, int64_t v) {
    return dispatch_dtype(t, [&](auto d) -> int64_t {
      if constexpr (is_int(decltype(d)::value)) return wrap_int<decltype(d)::value>(uint64_t(v));
      else return v;
    });
  }

  Program& prog_;
  std::unordered_map<const ir::Value*, int> slot_of_;
  std::optional<transforms::AxisAnalysis> axis_;  // made at the first hint
};

}  // namespace

std::shared_ptr<const Program> compile(const ir::Function& fn) {
  auto prog = std::make_shared<Program>();
  prog->fn = &fn;
  // Tensor descriptors run as the masked loads and stores they mean, in a
  // copy the program keeps.
  bool descriptors = false;
  ir::walk(const_cast<ir::Region&>(fn.body), [&](ir::Op* op) {
    descriptors = descriptors || op->kind == ir::OpKind::DescriptorLoad || op->kind == ir::OpKind::DescriptorStore;
  });
  if (descriptors) {
    prog->lowered = ir::clone(fn);
    transforms::lower_descriptors(*prog->lowered);
    prog->fn = prog->lowered.get();
  }
  Compiler c(*prog);
  prog->body = c.block(prog->fn->body, false);
  return prog;
}

}  // namespace tl::interp
