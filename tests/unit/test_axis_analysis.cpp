// Axis analysis on hand-built IR: the facts that decide vector widths.
#include <catch2/catch.hpp>

#include "ir/ir.h"
#include "transforms/axis_analysis.h"

using namespace tl;
using namespace tl::ir;
using tl::transforms::AxisAnalysis;
using tl::transforms::ArgFacts;

namespace {
// The vector_add pattern: offs = pid * BLOCK + arange(0, BLOCK);
// load(x + offs, offs < n).
struct VectorAdd {
  Function fn;
  Op* load = nullptr;
  Value *offs = nullptr, *mask = nullptr, *ptrs = nullptr;
  explicit VectorAdd(int64_t block, DType elem = DType::f32) {
    Value* x = fn.body.add_arg(ptr_type(elem));
    Value* n = fn.body.add_arg(scalar_type(DType::i32));
    Builder b(&fn.body);
    Type idx = tile_type(DType::i32, {block});
    Value* pid = b.create1(OpKind::ProgramId, {}, scalar_type(DType::i32), {{"axis", int64_t(0)}});
    Value* base = b.create1(OpKind::Mul, {pid, b.constant_int(scalar_type(DType::i32), block)}, scalar_type(DType::i32));
    Value* range = b.create1(OpKind::Arange, {}, idx, {{"start", int64_t(0)}, {"end", block}});
    offs = b.create1(OpKind::Add, {b.create1(OpKind::Splat, {base}, idx), range}, idx);
    Type ptile = Type{elem, true, {block}};
    ptrs = b.create1(OpKind::AddPtr, {b.create1(OpKind::Splat, {x}, ptile), offs}, ptile);
    mask = b.create1(OpKind::Cmp, {offs, b.create1(OpKind::Splat, {n}, idx)}, tile_type(DType::i1, {block}),
                     {{"pred", std::string("lt")}});
    load = b.create(OpKind::Load, {ptrs, mask}, {Type{elem, false, {block}}});
  }
};
}  // namespace

TEST_CASE("offsets from program_id and arange are contiguous and aligned", "[axis]") {
  VectorAdd k(1024);
  AxisAnalysis a(k.fn, {{16, {}}, {16, {}}});
  const auto& offs = a.get(k.offs);
  CHECK(offs.contiguity[0] == 1024);
  CHECK(offs.divisibility[0] == 1024);
  CHECK(offs.constancy[0] == 1);
  CHECK(a.get(k.ptrs).divisibility[0] == 16);  // bytes: the argument's alignment
  CHECK(a.get(k.mask).constancy[0] == 16);     // n divisible by 16
  CHECK(a.vector_width(*k.load) == 4);         // 16 bytes of f32
}

TEST_CASE("an unspecialized bound limits the vector to one element", "[axis]") {
  VectorAdd k(1024);
  AxisAnalysis a(k.fn, {{16, {}}, {1, {}}});
  CHECK(a.get(k.mask).constancy[0] == 1);
  CHECK(a.vector_width(*k.load) == 1);
}

TEST_CASE("an unaligned pointer limits the vector width", "[axis]") {
  VectorAdd k(1024, DType::bf16);
  AxisAnalysis aligned(k.fn, {{16, {}}, {16, {}}});
  CHECK(aligned.vector_width(*k.load) == 8);  // 16 bytes of bf16
  AxisAnalysis unaligned(k.fn, {{4, {}}, {16, {}}});
  CHECK(unaligned.vector_width(*k.load) == 2);
}

TEST_CASE("2-D offsets: rows broadcast, columns contiguous", "[axis]") {
  // offs[i, j] = i * stride + j, stride specialized divisible by 16.
  Function fn;
  Value* stride = fn.body.add_arg(scalar_type(DType::i32));
  Builder b(&fn.body);
  Type i32 = scalar_type(DType::i32);
  Value* rows = b.create1(OpKind::Arange, {}, tile_type(DType::i32, {32}), {{"start", int64_t(0)}, {"end", int64_t(32)}});
  Value* cols = b.create1(OpKind::Arange, {}, tile_type(DType::i32, {64}), {{"start", int64_t(0)}, {"end", int64_t(64)}});
  Value* r2 = b.create1(OpKind::ExpandDims, {rows}, tile_type(DType::i32, {32, 1}), {{"axis", int64_t(1)}});
  Value* rs = b.create1(OpKind::Mul, {r2, b.create1(OpKind::Splat, {stride}, tile_type(DType::i32, {32, 1}))},
                        tile_type(DType::i32, {32, 1}));
  Value* rb = b.create1(OpKind::Broadcast, {rs}, tile_type(DType::i32, {32, 64}));
  Value* c2 = b.create1(OpKind::ExpandDims, {cols}, tile_type(DType::i32, {1, 64}), {{"axis", int64_t(0)}});
  Value* cb = b.create1(OpKind::Broadcast, {c2}, tile_type(DType::i32, {32, 64}));
  Value* offs = b.create1(OpKind::Add, {rb, cb}, tile_type(DType::i32, {32, 64}));
  (void)i32;
  AxisAnalysis a(fn, {{16, {}}});
  const auto& info = a.get(offs);
  CHECK(info.contiguity[1] == 64);
  CHECK(info.contiguity[0] == 1);
  CHECK(info.divisibility[1] == 16);
  CHECK(a.get(rb).constancy[1] == 64);
}

TEST_CASE("modulo and division by a power of two", "[axis]") {
  Function fn;
  Builder b(&fn.body);
  Type idx = tile_type(DType::i32, {128});
  Value* r = b.create1(OpKind::Arange, {}, idx, {{"start", int64_t(0)}, {"end", int64_t(128)}});
  Value* eight = b.constant_int(idx, 8);
  Value* m = b.create1(OpKind::Rem, {r, eight}, idx);
  Value* d = b.create1(OpKind::Div, {r, eight}, idx);
  AxisAnalysis a(fn);
  CHECK(a.get(m).contiguity[0] == 8);
  CHECK(a.get(d).constancy[0] == 8);
  CHECK(a.get(d).contiguity[0] == 1);
}

TEST_CASE("an argument specialized as 1 is a known constant", "[axis]") {
  Function fn;
  Value* s = fn.body.add_arg(scalar_type(DType::i32));
  Builder b(&fn.body);
  Type idx = tile_type(DType::i32, {64});
  Value* r = b.create1(OpKind::Arange, {}, idx, {{"start", int64_t(0)}, {"end", int64_t(64)}});
  Value* scaled = b.create1(OpKind::Mul, {r, b.create1(OpKind::Splat, {s}, idx)}, idx);
  AxisAnalysis unknown(fn, {{1, {}}});
  CHECK(unknown.get(scaled).contiguity[0] == 1);
  AxisAnalysis one(fn, {{1, 1}});
  CHECK(one.get(scaled).contiguity[0] == 64);  // a unit stride keeps the run
}

TEST_CASE("a pointer tile advanced in a loop keeps its contiguity and alignment", "[axis]") {
  // p = x + arange(0, 128); for (...) { load(p); p += 128; }
  Function fn;
  Value* x = fn.body.add_arg(ptr_type(DType::f32));
  Value* n = fn.body.add_arg(scalar_type(DType::i32));
  Builder b(&fn.body);
  Type idx = tile_type(DType::i32, {128});
  Type ptile = Type{DType::f32, true, {128}};
  Value* range = b.create1(OpKind::Arange, {}, idx, {{"start", int64_t(0)}, {"end", int64_t(128)}});
  Value* p0 = b.create1(OpKind::AddPtr, {b.create1(OpKind::Splat, {x}, ptile), range}, ptile);
  Value* zero = b.constant_int(scalar_type(DType::i32), 0);
  Value* one = b.constant_int(scalar_type(DType::i32), 1);
  Op* loop = b.create(OpKind::For, {zero, n, one, p0}, {ptile});
  Region* body = loop->add_region();
  body->add_arg(scalar_type(DType::i32));
  Value* p = body->add_arg(ptile);
  Builder in(body);
  Op* load = in.create(OpKind::Load, {p}, {tile_type(DType::f32, {128})});
  Value* next = in.create1(OpKind::AddPtr, {p, in.constant_int(idx, 128)}, ptile);
  in.create(OpKind::Yield, {next}, {});
  AxisAnalysis a(fn, {{16, {}}, {1, {}}});
  CHECK(a.get(p).contiguity[0] == 128);
  CHECK(a.get(p).divisibility[0] == 16);
  CHECK(a.vector_width(*load) == 4);
  // An advance by 1 element breaks the alignment: the loop must notice.
  Builder before;
  before.set_insertion_before(next->def);
  next->def->operands[1] = before.constant_int(idx, 1);
  AxisAnalysis odd(fn, {{16, {}}, {1, {}}});
  CHECK(odd.get(p).divisibility[0] == 4);
  CHECK(odd.vector_width(*load) == 1);
}
