// Host-only tests of the linear layout algebra: products, application,
// composition, inversion, slicing, vector widths, swizzles.
#include <catch2/catch.hpp>

#include <set>

#include "ir/linear_layout.h"

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

TEST_CASE("bad layouts are rejected with a message", "[layout]") {
  CHECK_THROWS_WITH(LinearLayout::identity(kReg, 6, "dim0"), Catch::Contains("power of two, found 6"));
  CHECK_THROWS_WITH(LinearLayout({{kReg, {{4}}}}, {{"dim0", 4}}), Catch::Contains("leaves output 'dim0'"));
  CHECK_THROWS_WITH(blocked_layout({64, 32}, {1, 4}, {4, 8}, {4}, {1, 0}), Catch::Contains("warps_per_block"));
}
