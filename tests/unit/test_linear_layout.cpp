// Host-only tests of the linear layout algebra: products, application,
// composition, inversion, slicing, vector widths, swizzles.
#include <catch2/catch.hpp>

#include <set>

#include "ir/linear_layout.h"
#include "ir/parser.h"

using tl::ir::LinearLayout;
using namespace tl::ir;

namespace {
// Every (register, lane, warp) index of `l` applied, as a multiset of coords.
std::multiset<LinearLayout::Coords> image(const LinearLayout& l) {
  std::multiset<LinearLayout::Coords> s;
  for (int r = 0; r < l.in_size(kReg); ++r)
    for (int ln = 0; ln < l.in_size(kLane); ++ln)
      for (int w = 0; w < l.in_size(kWarp); ++w) s.insert(l.apply({{kReg, r}, {kLane, ln}, {kWarp, w}}));
  return s;
}
}  // namespace

TEST_CASE("identity and product place bits", "[layout]") {
  auto l = LinearLayout::identity(kReg, 4, "dim0") * LinearLayout::identity(kReg, 2, "dim1");
  CHECK(l.in_bits(kReg) == 3);
  CHECK(l.out_size("dim0") == 4);
  CHECK(l.out_size("dim1") == 2);
  CHECK(l.apply({{kReg, 5}}) == LinearLayout::Coords{1, 1});
  CHECK(l.apply({{kReg, 6}}) == LinearLayout::Coords{2, 1});
  // Same output dimension: the right operand's coordinate bits go above.
  auto m = LinearLayout::identity(kReg, 2, "dim0") * LinearLayout::identity(kLane, 4, "dim0");
  CHECK(m.out_size("dim0") == 8);
  CHECK(m.apply({{kReg, 1}, {kLane, 3}}) == LinearLayout::Coords{7});
}

TEST_CASE("blocked layout covers the tile once per thread", "[layout]") {
  // [64, 32] f32, 4 per thread along dim1, 8x4 lanes, 4 warps along dim0.
  auto l = blocked_layout({64, 32}, {1, 4}, {4, 8}, {4, 1}, {1, 0});
  CHECK(l.in_bits(kReg) == 4);  // 4 contiguous x 4 repeats along dim0
  CHECK(l.in_bits(kLane) == 5);
  CHECK(l.in_bits(kWarp) == 2);
  auto img = image(l);
  std::set<LinearLayout::Coords> distinct(img.begin(), img.end());
  CHECK(distinct.size() == 64 * 32);
  CHECK(img.size() == 64 * 32);  // a bijection: nothing held twice
  CHECK(l.contiguous_run(kReg, 1) == 4);
  CHECK(l.contiguous_run(kReg, 0) == 1);
  // Lane 1 holds columns 4..7 of row 0.
  CHECK(l.apply({{kLane, 1}}) == LinearLayout::Coords{0, 4});
  CHECK(l.apply({{kLane, 8}}) == LinearLayout::Coords{1, 0});
  CHECK(l.apply({{kWarp, 1}}) == LinearLayout::Coords{4, 0});
}

TEST_CASE("a tile smaller than the block broadcasts", "[layout]") {
  // [128] with 4 per thread, 32 lanes, 4 warps covers 512: warps replicate.
  auto l = blocked_layout({128}, {4}, {32}, {4}, {0});
  CHECK(l.out_size("dim0") == 128);
  CHECK(l.broadcast_mask(kWarp) == 0b11);
  CHECK(l.broadcast_mask(kLane) == 0);
  CHECK(l.contiguous_run(kReg, 0) == 4);
  auto img = image(l);
  CHECK(img.count({5}) == 4);  // every element held by all four warps
}

TEST_CASE("inversion round-trips bijective layouts", "[layout]") {
  auto l = blocked_layout({32, 64}, {2, 2}, {8, 4}, {2, 2}, {0, 1});
  auto inv = l.invert();
  REQUIRE(inv);
  for (int r = 0; r < l.in_size(kReg); ++r)
    for (int ln = 0; ln < 32; ln += 7)
      for (int w = 0; w < 4; ++w) {
        auto c = l.apply({{kReg, r}, {kLane, ln}, {kWarp, w}});
        auto back = inv->apply({{"dim0", c[0]}, {"dim1", c[1]}});
        CHECK(back == LinearLayout::Coords{r, ln, w});
      }
  // Composition with the inverse is the identity.
  auto id = l.compose(*inv);
  for (int r = 0; r < l.in_size(kReg); ++r) CHECK(id.apply({{kReg, r}}) == LinearLayout::Coords{r, 0, 0});
}

TEST_CASE("inversion of a broadcasting layout avoids broadcast bits", "[layout]") {
  auto l = blocked_layout({128}, {4}, {32}, {4}, {0});
  auto inv = l.invert();
  REQUIRE(inv);
  for (int x = 0; x < 128; ++x) {
    auto hw = inv->apply({{"dim0", x}});
    CHECK(hw[2] == 0);  // warp 0 always
    CHECK(l.apply({{kReg, hw[0]}, {kLane, hw[1]}, {kWarp, hw[2]}}) == LinearLayout::Coords{x});
  }
}

TEST_CASE("a non-surjective layout has no inverse", "[layout]") {
  LinearLayout l({{kReg, {{1}, {0}}}}, {{"dim0", 4}});
  CHECK_FALSE(l.invert());
}

TEST_CASE("conversion between layouts is computed, not special-cased", "[layout]") {
  // Row-major threads vs column-major threads over the same [16, 16] tile.
  auto a = blocked_layout({16, 16}, {1, 4}, {4, 8}, {4, 1}, {1, 0});
  auto b = blocked_layout({16, 16}, {4, 1}, {8, 4}, {1, 4}, {0, 1});
  auto conv = a.invert_and_compose(b);
  REQUIRE(conv);
  for (int r = 0; r < a.in_size(kReg); ++r)
    for (int ln = 0; ln < 32; ++ln) {
      auto hw = conv->apply({{kReg, r}, {kLane, ln}});
      CHECK(b.apply({{kReg, hw[0]}, {kLane, hw[1]}, {kWarp, hw[2]}}) == a.apply({{kReg, r}, {kLane, ln}}));
    }
  // Converting a layout to itself keeps every index where it is.
  auto self = a.invert_and_compose(a);
  REQUIRE(self);
  CHECK(self->apply({{kReg, 3}, {kLane, 17}, {kWarp, 2}}) == LinearLayout::Coords{3, 17, 2});
}

TEST_CASE("slicing drops a dimension and its repeated registers", "[layout]") {
  auto l = blocked_layout({32, 32}, {1, 4}, {4, 8}, {4, 1}, {1, 0});
  auto s = l.slice(1);  // reduce along dim1: what is left is indexed by dim0
  CHECK(s.out_dims().size() == 1);
  CHECK(s.out_size("dim0") == 32);
  CHECK(s.in_bits(kReg) == 1);               // the 2 repeats along dim0
  CHECK(s.broadcast_mask(kLane) == 0b00111);  // the 8 lanes along dim1 now agree
  CHECK(s.constant_along(kLane, 0) == false);
  // Along dim0 instead: what is left, dim1, is the slice's dim0 (tiles name
  // their dimensions by position).
  auto r = l.slice(0);
  REQUIRE(r.out_dims().size() == 1);
  CHECK(r.out_dims()[0].name == "dim0");
  CHECK(r.out_size("dim0") == 32);
}

TEST_CASE("swizzled shared layout spreads rows over banks", "[layout]") {
  // [64, 64] bf16: vec = 8 elements (16 bytes), 8 phases, one row per phase.
  auto l = swizzled_shared_layout({64, 64}, 8, 1, 8, {1, 0});
  CHECK(l.in_bits(kOffset) == 12);
  auto inv = l.invert();
  REQUIRE(inv);  // a permutation of the buffer
  // The 16-byte chunk holding column chunk 0 of rows 0..7 differs per row:
  // eight threads reading it in one ldmatrix hit eight different chunks.
  std::set<int> chunks;
  for (int row = 0; row < 8; ++row) {
    int off = inv->apply({{"dim0", row}, {"dim1", 0}})[0];
    chunks.insert((off % 64) / 8);
  }
  CHECK(chunks.size() == 8);
  // Within a chunk, elements stay contiguous (a 16-byte vector access).
  int base = inv->apply({{"dim0", 3}, {"dim1", 0}})[0];
  for (int c = 1; c < 8; ++c) CHECK(inv->apply({{"dim0", 3}, {"dim1", c}})[0] == base + c);
}

namespace {
using L = LinearLayout;
// A wgmma accumulator over a 192 x 160 tile (docs/hopper-plan.md): a
// warpgroup's 64 rows by lanes (8), the second register (row + 8) and its
// 4 warps (16 rows each), 3 warpgroups above; columns by register pairs,
// lanes (4) and 20 chunks of 8 (two bits, then a repeat of 5). 80
// registers a thread.
L accumulator_192x160() {
  return L({}, {{"dim0", 1}, {"dim1", 1}}) * L::identity(kReg, 2, "dim1") * L::identity(kLane, 4, "dim1") *
         L::identity(kLane, 8, "dim0") *
         L::identity(kReg, 2, "dim0") * L::identity(kWarp, 4, "dim0") * L::identity(kReg, 4, "dim1") *
         L::repeat(kReg, 5, "dim1") * L::repeat(kWarp, 3, "dim0");
}
// Every (register, lane, warp) index of `l` with the coordinates it maps to.
std::vector<std::pair<L::Coords, L::Coords>> every_index(const L& l) {
  std::vector<std::pair<L::Coords, L::Coords>> v;
  for (int r = 0; r < l.in_size(kReg); ++r)
    for (int ln = 0; ln < l.in_size(kLane); ++ln)
      for (int w = 0; w < l.in_size(kWarp); ++w)
        v.push_back({{r, ln, w}, l.apply({{kReg, r}, {kLane, ln}, {kWarp, w}})});
  return v;
}
}  // namespace

TEST_CASE("a repeat is a digit above the bits", "[layout]") {
  auto r = L::repeat(kReg, 5, "dim1");
  CHECK(r.in_bits(kReg) == 0);
  CHECK(r.repeat_count(kReg) == 5);
  CHECK(r.in_size(kReg) == 5);
  CHECK(r.out_size("dim1") == 5);
  CHECK(r.apply({{kReg, 4}}) == L::Coords{4});
  CHECK_THROWS_WITH(r.apply({{kReg, 5}}), Catch::Contains("out of range: 5"));
  // One form: a count's factors of two are bits (12 = 4 x 3).
  CHECK(L::repeat(kReg, 12, "dim0") == L::identity(kReg, 4, "dim0") * L::repeat(kReg, 3, "dim0"));
  CHECK(L::repeat(kReg, 8, "dim0") == L::identity(kReg, 8, "dim0"));
  // Above bits along the same output: bits first, then steps of their reach.
  auto l = L::identity(kReg, 4, "dim0") * L::repeat(kReg, 3, "dim0");
  CHECK(l.in_size(kReg) == 12);
  for (int v = 0; v < 12; ++v) CHECK(l.apply({{kReg, v}}) == L::Coords{v});
  CHECK(l.str() == "register: [(1), (2); 3 x (4)] -> dim0:12");
  CHECK(L::repeat(kWarp, 3, "dim0").str() == "warp: [3 x (1)] -> dim0:3");
  CHECK_FALSE(l.constant_along(kReg, 0));
}

TEST_CASE("a 192 x 160 accumulator over three warpgroups is a bijection", "[layout]") {
  auto l = accumulator_192x160();
  CHECK(l.in_size(kReg) == 80);
  CHECK(l.in_size(kWarp) == 12);
  CHECK(l.out_size("dim0") == 192);
  CHECK(l.out_size("dim1") == 160);
  std::set<L::Coords> held;
  for (const auto& [hw, c] : every_index(l)) {
    CHECK((c[0] < 192 && c[1] < 160));
    held.insert(c);
  }
  CHECK(held.size() == 192 * 160);
  // Warpgroup 2's warp 1, lane 5, register 79: row 2*64 + 16 + 1 + 8, column
  // chunk 19 (32 * 4 + 8 * 3) + lane 1's pair 2 + 1.
  CHECK(l.apply({{kReg, 79}, {kLane, 5}, {kWarp, 9}}) == L::Coords{128 + 16 + 8 + 1, 152 + 3});
  // Inverse: every index back from its coordinates.
  auto inv = l.invert();
  REQUIRE(inv);
  CHECK(inv->repeat_count("dim0") == 3);
  CHECK(inv->repeat_count("dim1") == 5);
  for (const auto& [hw, c] : every_index(l)) CHECK(inv->apply({{"dim0", c[0]}, {"dim1", c[1]}}) == hw);
  // The same tile with the column bits before the row bit: the conversion
  // keeps both repeats (registers permute, threads stay).
  auto m = L({}, {{"dim0", 1}, {"dim1", 1}}) * L::identity(kReg, 2, "dim1") * L::identity(kLane, 4, "dim1") * L::identity(kReg, 4, "dim1") *
           L::identity(kLane, 8, "dim0") * L::identity(kReg, 2, "dim0") * L::identity(kWarp, 4, "dim0") *
           L::repeat(kReg, 5, "dim1") * L::repeat(kWarp, 3, "dim0");
  auto conv = l.invert_and_compose(m);
  REQUIRE(conv);
  CHECK(conv->repeat_count(kReg) == 5);
  for (const auto& [hw, c] : every_index(l)) {
    auto to = conv->apply({{kReg, hw[0]}, {kLane, hw[1]}, {kWarp, hw[2]}});
    CHECK(m.apply({{kReg, to[0]}, {kLane, to[1]}, {kWarp, to[2]}}) == c);
    CHECK((to[1] == hw[1] && to[2] == hw[2]));
  }
}

TEST_CASE("slicing a layout with repeats", "[layout]") {
  auto l = accumulator_192x160();
  // Remove the columns: the registers' column repeat goes, the warps' row
  // repeat stays.
  auto rows = l.slice(1);
  CHECK(rows.in_size(kReg) == 2);
  CHECK(rows.repeat_count(kWarp) == 3);
  CHECK(rows.out_dims()[0].size == 192);
  // Remove the rows: the warps' repeat replicates (12 warps, 1 column set),
  // and the columns are the slice's dim0.
  auto cols = l.slice(0);
  CHECK(cols.out_dims()[0].name == "dim0");
  CHECK(cols.in_size(kReg) == 40);
  CHECK(cols.in_size(kWarp) == 12);
  CHECK(cols.broadcast_mask(kWarp) == 0b11);
  CHECK(cols.constant_along(kWarp, 0));
  auto compact = cols.remove_broadcast(kWarp);
  CHECK(compact.in_size(kWarp) == 1);
  auto inv = cols.invert();  // a right inverse: warp 0 holds every column
  REQUIRE(inv);
  for (int c = 0; c < 160; ++c) {
    auto hw = inv->apply({{"dim0", c}});
    CHECK(hw[2] == 0);
    CHECK(cols.apply({{kReg, hw[0]}, {kLane, hw[1]}, {kWarp, hw[2]}}) == L::Coords{c});
  }
}

TEST_CASE("repeats that cannot be kept are errors", "[layout]") {
  // The repeat must stay the highest digit of its input ...
  CHECK_THROWS_WITH(L::repeat(kReg, 3, "dim0") * L::identity(kReg, 2, "dim1"),
                    Catch::Contains("the repeat of 'register' must stay its highest digit"));
  // ... and nothing can go above an output whose size is not a power of two.
  CHECK_THROWS_WITH(L::repeat(kReg, 3, "dim0") * L::identity(kLane, 2, "dim0"),
                    Catch::Contains("output 'dim0' of the left operand has size 3, not a power of two"));
  // Composition keeps a repeat only where the outer layout steps evenly.
  auto outer_ok = L::identity("dim0", 4, "offset");
  auto c = L::repeat(kReg, 3, "dim0").compose(outer_ok);
  CHECK(c.apply({{kReg, 2}}) == L::Coords{2});
  L outer_xor({{"dim0", {{1}, {3}}}}, {{"offset", 4}});  // 2 -> 3: not 2 x (1 -> 1)
  CHECK_THROWS_WITH(L::repeat(kReg, 3, "dim0").compose(outer_xor),
                    Catch::Contains("the repeat of 'register' (3 x (1)) is not a repeat"));
  // A layout that does not reach its whole output has no inverse.
  CHECK_FALSE(L({{kReg, {}, 3, {1}}}, {{"dim0", 4}}).invert());
  CHECK_FALSE(L({{kReg, {{1}}}}, {{"dim0", 6}}).invert());
  // Bad repeats.
  CHECK_THROWS_WITH(L({{kReg, {}, 3, {3}}}, {{"dim0", 9}}), Catch::Contains("a power of two along one output, found (3)"));
  CHECK_THROWS_WITH(L({{kReg, {}, 3, {1, 1}}}, {{"dim0", 3}, {"dim1", 3}}),
                    Catch::Contains("a power of two along one output, found (1,1)"));
  CHECK_THROWS_WITH(L({{kReg, {}, 3, {2}}}, {{"dim0", 4}}), Catch::Contains("reaches 6 along output 'dim0' of size 4"));
  CHECK_THROWS_WITH(L({{kReg, {{2}}, 3, {2}}}, {{"dim0", 6}}), Catch::Contains("below its repeat's stride 2"));
  CHECK_THROWS_WITH(L({{kReg, {}, 3, {1}}, {kLane, {}, 3, {1}}}, {{"dim0", 3}}),
                    Catch::Contains("two repeats move along output 'dim0'"));
  CHECK_THROWS_WITH(L({{kReg, {}, 0, {}}}, {{"dim0", 1}}), Catch::Contains("at least 1, found 0"));
  // A count that is a power of two is bits, not a repeat: beside another
  // input's repeat along the same output it is no second repeat.
  L bits_and_repeat({{kReg, {}, 4, {1}}, {kLane, {}, 3, {4}}}, {{"dim0", 12}});
  CHECK(bits_and_repeat.in_bits(kReg) == 2);
  CHECK(bits_and_repeat.apply({{kReg, 3}, {kLane, 2}}) == L::Coords{11});
}

TEST_CASE("a repeat reads back from GPU IR text", "[layout]") {
  std::string text =
      "#l1 = {register: [(0,1); 5 x (0,2)] lane: [(2,0), (4,0)] warp: [3 x (8,0)] -> dim0:24 dim1:10}\n"
      "func @f() attributes {num_ctas = 1, num_warps = 4, warp_size = 32} {\n}\n";
  auto m = tl::ir::parse(text, "r.tir");
  REQUIRE(m->functions.size() == 1);
  REQUIRE(m->functions[0]->layouts.size() == 1);
  const L& l = m->functions[0]->layouts[0];
  CHECK(l.repeat_count(kReg) == 5);
  CHECK(l.in_size(kWarp) == 3);
  CHECK(l.apply({{kReg, 9}, {kWarp, 2}}) == L::Coords{16, 9});
  CHECK(l.str() == "register: [(0,1); 5 x (0,2)] lane: [(2,0), (4,0)] warp: [3 x (8,0)] -> dim0:24 dim1:10");
}

TEST_CASE("outer repeats: a [192, 160] buffer's rows and panels as digits of mixed radix", "[layout]") {
  // 64 rows x 32 columns in 11 bits (row-major here), then 3 x 64 rows,
  // then 5 panels of 32 columns: offset = c + 32 r + 2048 (r / 64) + 6144 (c / 32).
  L::InDim off{kOffset, {}, 3, {64, 0}, {{5, {0, 32}}}};
  for (int b = 0; b < 5; ++b) off.bases.push_back({0, 1 << b});
  for (int b = 0; b < 6; ++b) off.bases.push_back({1 << b, 0});
  L l({off}, {{"dim0", 192}, {"dim1", 160}});
  CHECK(l.in_size(kOffset) == 192 * 160);
  CHECK(l.repeat_count(kOffset) == 15);
  std::set<L::Coords> seen;
  for (int o = 0; o < l.in_size(kOffset); ++o) {
    L::Coords c = l.apply({{kOffset, o}});
    REQUIRE(c[0] < 192);
    REQUIRE(c[1] < 160);
    seen.insert(c);
    int r = c[0], col = c[1];
    REQUIRE(o == col % 32 + 32 * (r % 64) + 2048 * (r / 64) + 6144 * (col / 32));
  }
  CHECK(seen.size() == 192u * 160u);
  CHECK(l.contiguous_run(kOffset, 1) == 32);
  CHECK(l.str() == "offset: [(0,1), (0,2), (0,4), (0,8), (0,16), (1,0), (2,0), (4,0), (8,0), (16,0), (32,0); "
                   "3 x (64,0), 5 x (0,32)] -> dim0:192 dim1:160");
  auto m = tl::ir::parse("#l1 = {" + l.str() + "}\nfunc @f() attributes {num_ctas = 1, num_warps = 4, warp_size = 32} {\n}\n", "o.tir");
  CHECK(m->functions[0]->layouts[0] == l);
  // What the algebra cannot do with them, it refuses.
  CHECK_FALSE(l.invert());
  CHECK_THROWS_WITH(l.slice(0), Catch::Contains("slice: a layout with more than one repeat of 'offset' is not supported"));
  CHECK_THROWS_WITH(l * L::identity(kBlock, 2, "dim0"), Catch::Contains("product: a layout with more than one repeat"));
  // Each outer digit: a count of 2 or more, above a repeat, along an output of its own, to its end.
  CHECK_THROWS_WITH(L({{kOffset, {}, 1, {}, {{5, {32}}}}}, {{"dim0", 160}}), Catch::Contains("needs a repeat below it"));
  CHECK_THROWS_WITH(L({{kOffset, {{0, 1}}, 3, {2, 0}, {{1, {0, 2}}}}}, {{"dim0", 6}, {"dim1", 2}}),
                    Catch::Contains("a count of at least 2, found 1"));
  CHECK_THROWS_WITH(L({{kOffset, {}, 3, {1, 0}, {{5, {3, 0}}}}}, {{"dim0", 15}, {"dim1", 1}}),
                    Catch::Contains("a power of two along one output, found (3,0)"));
  CHECK_THROWS_WITH(L({{kOffset, {{0, 1}}, 3, {1, 0}, {{5, {0, 2}}}}}, {{"dim0", 3}, {"dim1", 16}}),
                    Catch::Contains("must reach the size of output 'dim1'"));
}

TEST_CASE("outer repeats of an even count: a [192, 128] buffer's two panels above its rows' repeat", "[layout]") {
  // 64 rows x 64 columns in 12 bits, then 3 x 64 rows, then 2 panels of 64
  // columns (a factor of two above the repeat, which no bit can be):
  // offset = c % 64 + 64 r + 4096 (r / 64) + 12288 (c / 64).
  L::InDim off{kOffset, {}, 3, {64, 0}, {{2, {0, 64}}}};
  for (int b = 0; b < 6; ++b) off.bases.push_back({0, 1 << b});
  for (int b = 0; b < 6; ++b) off.bases.push_back({1 << b, 0});
  L l({off}, {{"dim0", 192}, {"dim1", 128}});
  CHECK(l.in_size(kOffset) == 192 * 128);
  std::set<L::Coords> seen;
  for (int o = 0; o < l.in_size(kOffset); ++o) {
    L::Coords c = l.apply({{kOffset, o}});
    int r = c[0], col = c[1];
    REQUIRE(o == col % 64 + 64 * (r % 64) + 4096 * (r / 64) + 12288 * (col / 64));
    seen.insert(c);
  }
  CHECK(seen.size() == 192u * 128u);
  auto m = tl::ir::parse("#l1 = {" + l.str() + "}\nfunc @f() attributes {num_ctas = 1, num_warps = 4, warp_size = 32} {\n}\n", "o.tir");
  CHECK(m->functions[0]->layouts[0] == l);
}

TEST_CASE("bad layouts are rejected with a message", "[layout]") {
  CHECK_THROWS_WITH(LinearLayout::identity(kReg, 6, "dim0"), Catch::Contains("power of two, found 6"));
  CHECK_THROWS_WITH(LinearLayout({{kReg, {{4}}}}, {{"dim0", 4}}), Catch::Contains("leaves output 'dim0'"));
  CHECK_THROWS_WITH(blocked_layout({64, 32}, {1, 4}, {4, 8}, {4}, {1, 0}), Catch::Contains("warps_per_block"));
}
