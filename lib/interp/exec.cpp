// The interpreter's driver: runs a Program over the grid, dispatches each
// instruction to its op family, and implements control flow (for, if), the
// leaves (program_id, num_programs) and the debugging ops (assert, print).
#include <charconv>
#include <iostream>
#include <sstream>

#include "interp/element.h"
#include "interp/program.h"

namespace tl::interp {

std::string index_str(const std::vector<int64_t>& shape, int64_t linear) {
  std::vector<int64_t> idx(shape.size());
  for (int d = int(shape.size()) - 1; d >= 0; --d) {
    idx[size_t(d)] = linear % shape[size_t(d)];
    linear /= shape[size_t(d)];
  }
  std::string s = "[";
  for (size_t d = 0; d < idx.size(); ++d) s += (d ? ", " : "") + std::to_string(idx[d]);
  return s + "]";
}

Exec::Exec(const Program& p, Memory& m, std::ostream& os) : prog(p), mem(m), print_to(os) {
  slots.resize(p.slot_types.size());
  for (size_t s = 0; s < slots.size(); ++s) {
    const ir::Type& t = *p.slot_types[s];
    slots[s].is_float = !t.is_ptr && is_float(t.dtype);
  }
}

std::string Exec::program_str() const {
  return "program (" + std::to_string(pid[0]) + ", " + std::to_string(pid[1]) + ", " + std::to_string(pid[2]) + ")";
}

void Exec::fail(const Instr& in, const std::string& what) const {
  throw Error(in.op->loc.str() + ": " + what + " in " + program_str());
}

void Exec::run_block(const Block& b) {
  for (const Instr& in : b.instrs) exec(in);
}

namespace {

// Moves the loop body's yielded values into the carried arguments `args`
// (from index `first`).
void carry_yields(Exec& ex, const Block& body, const std::vector<int>& args, size_t first, std::vector<Slot>& scratch) {
  size_t n = body.yields.size();
  // First copy the values that cannot be swapped (region arguments, values
  // from outside the loop, values yielded twice) so a permutation of
  // arguments reads the old values.
  for (size_t j = 0; j < n; ++j)
    if (!body.yield_swappable[j]) {
      scratch[j].is_float = ex.slots[size_t(body.yields[j])].is_float;
      scratch[j].copy_from(ex.slots[size_t(body.yields[j])]);
    }
  for (size_t j = 0; j < n; ++j) {
    Slot& arg = ex.slots[size_t(args[j + first])];
    std::swap(arg, body.yield_swappable[j] ? ex.slots[size_t(body.yields[j])] : scratch[j]);
  }
}

void exec_for(Exec& ex, const Instr& in) {
  const Block& body = in.regions[0];
  int64_t lo = ex.slots[size_t(in.in[0])].i[0];
  int64_t hi = ex.slots[size_t(in.in[1])].i[0];
  int64_t step = ex.slots[size_t(in.in[2])].i[0];
  // Checked whether or not the loop runs: a traced negative step (Python's
  // descending range) would otherwise run no iterations without a word.
  if (step <= 0) ex.fail(in, "for loop step must be positive, found " + std::to_string(step));
  uint64_t trips = 0;
  if (hi > lo) {
    uint64_t span = uint64_t(hi) - uint64_t(lo);
    trips = span / uint64_t(step) + (span % uint64_t(step) != 0);
  }
  size_t carried = in.in.size() - 3;
  for (size_t j = 0; j < carried; ++j)
    ex.slots[size_t(body.args[j + 1])].copy_from(ex.slots[size_t(in.in[j + 3])]);
  DType iv_dtype = ex.type_of(body.args[0]).dtype;
  Slot& iv = ex.slots[size_t(body.args[0])];
  std::vector<Slot> scratch(carried);
  for (uint64_t t = 0; t < trips; ++t) {
    uint64_t v = uint64_t(lo) + t * uint64_t(step);
    iv.resize(1);
    iv.i[0] = dispatch_dtype(iv_dtype, [&](auto d) -> int64_t {
      if constexpr (is_int(decltype(d)::value)) return wrap_int<decltype(d)::value>(v);
      else return int64_t(v);
    });
    ex.run_block(body);
    carry_yields(ex, body, body.args, 1, scratch);
  }
  for (size_t j = 0; j < in.out.size(); ++j)
    ex.slots[size_t(in.out[j])].copy_from(ex.slots[size_t(body.args[j + 1])]);
}

// The condition's arguments hold the carried values; the body's take them
// (swapped in: the body's yields then refill the condition's).
void exec_while(Exec& ex, const Instr& in) {
  const Block& cond = in.regions[0];
  const Block& body = in.regions[1];
  size_t carried = in.in.size();
  for (size_t j = 0; j < carried; ++j) ex.slots[size_t(cond.args[j])].copy_from(ex.slots[size_t(in.in[j])]);
  std::vector<Slot> scratch(carried);
  for (;;) {
    ex.run_block(cond);
    if (ex.slots[size_t(cond.yields[0])].i[0] == 0) break;
    for (size_t j = 0; j < carried; ++j) std::swap(ex.slots[size_t(cond.args[j])], ex.slots[size_t(body.args[j])]);
    ex.run_block(body);
    carry_yields(ex, body, cond.args, 0, scratch);
  }
  for (size_t j = 0; j < in.out.size(); ++j) ex.slots[size_t(in.out[j])].copy_from(ex.slots[size_t(cond.args[j])]);
}

void exec_if(Exec& ex, const Instr& in) {
  bool cond = ex.slots[size_t(in.in[0])].i[0] != 0;
  const Block& b = in.regions[cond ? 0 : 1];
  ex.run_block(b);
  for (size_t j = 0; j < in.out.size(); ++j)
    ex.slots[size_t(in.out[j])].copy_from(ex.slots[size_t(b.yields[j])]);
}

void exec_assert(Exec& ex, const Instr& in) {
  const Slot& cond = ex.slots[size_t(in.in[0])];
  for (int64_t k = 0; k < cond.n; ++k) {
    if (cond.i[size_t(k)] != 0) continue;
    const ir::Op& op = *in.op;
    ir::Loc loc = op.loc;
    if (op.has_attr("file") && op.has_attr("line")) loc = ir::Loc{op.attr_str("file"), int(op.attr_int("line"))};
    std::string where = ex.type_of(in.in[0]).is_tile() ? " at index " + index_str(ex.type_of(in.in[0]).shape, k) : "";
    throw Error(loc.str() + ": device assertion failed: " + op.attr_str_or("msg", "") + where + " in " +
                ex.program_str());
  }
}

// A broken tl::assume is the author's error, reported like a broken
// multiple_of (the GPU would run it as undefined).
void exec_assume(Exec& ex, const Instr& in) {
  const Slot& cond = ex.slots[size_t(in.in[0])];
  for (int64_t k = 0; k < cond.n; ++k)
    if (cond.i[size_t(k)] == 0) {
      std::string where = ex.type_of(in.in[0]).is_tile() ? " at index " + index_str(ex.type_of(in.in[0]).shape, k) : "";
      ex.fail(in, "assume: expected the assumed condition to hold, found it false" + where);
    }
}

void print_element(std::string& s, const Slot& v, const ir::Type& t, int64_t k) {
  char buf[64];
  std::to_chars_result r;
  if (t.is_ptr) {
    s += hex_address(uint64_t(v.i[size_t(k)]));
    return;
  }
  if (v.is_float) {
    if (t.dtype == DType::f64) r = std::to_chars(buf, buf + sizeof buf, v.f[size_t(k)]);
    else r = std::to_chars(buf, buf + sizeof buf, float(v.f[size_t(k)]));
  } else if (t.dtype == DType::u64) {
    r = std::to_chars(buf, buf + sizeof buf, uint64_t(v.i[size_t(k)]));
  } else {
    r = std::to_chars(buf, buf + sizeof buf, v.i[size_t(k)]);
  }
  s.append(buf, r.ptr);
}

// Prints a tile as nested brackets, row-major: [[1, 2], [3, 4]].
void print_value(std::string& s, const Slot& v, const ir::Type& t, int dim, int64_t& k) {
  if (dim == t.rank()) {
    print_element(s, v, t, k++);
    return;
  }
  s += "[";
  for (int64_t j = 0; j < t.shape[size_t(dim)]; ++j) {
    if (j) s += ", ";
    print_value(s, v, t, dim + 1, k);
  }
  s += "]";
}

// One line per program: "<prefix> pid (x, y, z): v0, v1".
void exec_print(Exec& ex, const Instr& in) {
  std::string line = in.op->attr_str_or("prefix", "");
  line += (line.empty() ? "pid (" : " pid (") + std::to_string(ex.pid[0]) + ", " + std::to_string(ex.pid[1]) +
          ", " + std::to_string(ex.pid[2]) + "):";
  for (size_t j = 0; j < in.in.size(); ++j) {
    line += j ? ", " : " ";
    int64_t k = 0;
    print_value(line, ex.slots[size_t(in.in[j])], ex.type_of(in.in[j]), 0, k);
  }
  line += "\n";
  ex.print_to << line;
}

}  // namespace

void Exec::exec(const Instr& in) {
  using K = ir::OpKind;
  switch (in.kind) {
    case K::ProgramId: case K::NumPrograms: {
      Slot& r = slots[size_t(in.out[0])];
      r.resize(1);
      r.i[0] = (in.kind == K::ProgramId ? pid : num_programs)[size_t(in.int_attr)];
      return;
    }
    case K::Constant: case K::Arange: case K::Splat: case K::Broadcast: case K::ExpandDims:
    case K::Reshape: case K::Trans: case K::Join: case K::Split:
      return exec_shape(*this, in);
    case K::Reduce: return exec_reduce(*this, in);
    case K::Scan: return exec_scan(*this, in);
    case K::Dot: return exec_dot(*this, in);
    case K::Load: case K::Store: case K::AtomicRmw: case K::AtomicCas:
      return exec_memory(*this, in);
    case K::Assert: return exec_assert(*this, in);
    case K::Assume: return exec_assume(*this, in);
    case K::Print: return exec_print(*this, in);
    case K::For: return exec_for(*this, in);
    case K::If: return exec_if(*this, in);
    case K::While: return exec_while(*this, in);
    case K::Yield: return;  // handled by the enclosing op through Block::yields
    case K::Barrier: return;  // a program's threads run as one here: nothing to wait for
    default: return exec_elementwise(*this, in);
  }
}

void run(const Program& prog, Grid grid, const std::vector<ArgValue>& args, Memory& mem, const RunOptions& opts) {
  const auto& params = prog.fn->body.args;
  if (args.size() != params.size())
    throw Error("interp: kernel '" + prog.fn->name + "' expects " + std::to_string(params.size()) +
                " arguments, found " + std::to_string(args.size()));
  if (grid.x == 0 || grid.y == 0 || grid.z == 0) return;  // an empty grid launches nothing
  std::lock_guard lock(mem.mutex());
  Exec ex(prog, mem, opts.print_to ? *opts.print_to : std::cout);
  ex.num_programs = {int64_t(grid.x), int64_t(grid.y), int64_t(grid.z)};
  for (size_t j = 0; j < args.size(); ++j) {
    Slot& s = ex.slots[size_t(prog.body.args[j])];
    s.resize(1);
    if (s.is_float) s.f[0] = args[j].f;
    else s.i[0] = args[j].i;
  }
  for (uint32_t z = 0; z < grid.z; ++z)
    for (uint32_t y = 0; y < grid.y; ++y)
      for (uint32_t x = 0; x < grid.x; ++x) {
        ex.pid = {int64_t(x), int64_t(y), int64_t(z)};
        ex.run_block(prog.body);
      }
}

}  // namespace tl::interp
