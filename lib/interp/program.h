// Internal form of an interpreted function: ops flattened into instructions
// whose operands and results are slot indices, and the per-launch state that
// holds one Slot (a flat row-major array) per SSA value. Shared by the files
// that implement the op families (exec_*.cpp).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "interp/interp.h"
#include "interp/memory.h"
#include "ir/ir.h"

namespace tl::interp {

// The value of one SSA value in the current program: `n` elements in row-major
// order, in `i` (integers, i1, pointers) or `f` (floats). Inside a reduce or
// scan region a scalar value may hold many lanes (one combine per lane), and
// elementwise ops broadcast an operand holding a single element.
struct Slot {
  bool is_float = false;
  int64_t n = 0;
  std::vector<int64_t> i;
  std::vector<double> f;

  void resize(int64_t count) {
    n = count;
    if (is_float) f.resize(size_t(count));
    else i.resize(size_t(count));
  }
  void copy_from(const Slot& o) {
    n = o.n;
    if (is_float) f.assign(o.f.begin(), o.f.begin() + o.n);
    else i.assign(o.i.begin(), o.i.begin() + o.n);
  }
};

struct Instr;

// A region: its argument slots, its ops, and the slots its yield returns.
struct Block {
  std::vector<int> args;
  std::vector<Instr> instrs;
  std::vector<int> yields;
  // For loop bodies: yield j may be swapped into arg j instead of copied
  // (its value is defined in the body and yielded once).
  std::vector<bool> yield_swappable;
};

enum class CmpPred : uint8_t { eq, ne, lt, le, gt, ge };
enum class AtomicKind : uint8_t { add, max, min, xchg, and_, or_, xor_ };

struct Instr {
  ir::OpKind kind;
  const ir::Op* op = nullptr;  // for its location, types and attributes
  std::vector<int> in, out;    // operand and result slots
  // Element dtype of operand 0 (pointers read as u64), or of the result for
  // ops without operands; out_dtype is that of result 0.
  DType dtype = DType::i32;
  DType out_dtype = DType::i32;
  int64_t int_attr = 0;        // axis, predicate, atomic kind, element size, constant
  double float_attr = 0;       // float constant
  bool flag = false;           // reverse (scan), tf32 (dot), lane-parallel region
  std::vector<int64_t> ints;   // trans order
  std::vector<Block> regions;
};

struct Program {
  const ir::Function* fn = nullptr;
  std::unique_ptr<ir::Function> lowered;  // fn, when the program runs a rewritten copy
  Block body;
  std::vector<const ir::Type*> slot_types;
};

// Per-launch execution state.
struct Exec {
  const Program& prog;
  std::vector<Slot> slots;
  std::array<int64_t, 3> pid{0, 0, 0};
  std::array<int64_t, 3> num_programs{1, 1, 1};
  Memory::Checker mem;
  std::vector<unsigned char*> hosts;  // host address of each lane of the current memory op
  std::ostream& print_to;

  Exec(const Program& p, Memory& m, std::ostream& os);
  void run_block(const Block& b);
  void exec(const Instr& in);

  const ir::Type& type_of(int slot) const { return *prog.slot_types[size_t(slot)]; }
  std::string program_str() const;
  // Throws tl::Error "<file>:<line>: <what> in program (x, y, z)".
  [[noreturn]] void fail(const Instr& in, const std::string& what) const;
};

// Op families (exec_*.cpp).
void exec_elementwise(Exec& ex, const Instr& in);
void exec_shape(Exec& ex, const Instr& in);
void exec_memory(Exec& ex, const Instr& in);
void exec_reduce(Exec& ex, const Instr& in);
void exec_scan(Exec& ex, const Instr& in);
void exec_dot(Exec& ex, const Instr& in);

// "[i, j]" for a row-major linear index into `shape` ("[]" for a scalar).
std::string index_str(const std::vector<int64_t>& shape, int64_t linear);
// "i32", "tile<64xptr<f32>>"... as the IR prints it.
inline std::string type_str(const ir::Type& t) { return t.str(); }

}  // namespace tl::interp
