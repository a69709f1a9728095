// Tile IR text form. Generic syntax for every op:
//   %r0, %r1 = name %a, %b {key = value, ...} : type0, type1 <regions> loc("file":line)
// Regions: "{" newline, optional "^(%x: type, ...):" argument line, ops, "}";
// an op's several regions are separated by ", ". Ops without results omit
// "= " and the ": types" part. Attributes print sorted by key: integers as
// 3, floats always with '.', 'e', inf or nan (1.0, -inf), strings quoted,
// integer arrays as [1, 0]. Functions:
//   func @name(%a: ptr<f32>, %n: i32) { ... }
// A GPU IR function also has attributes and a layout table, each layout on
// its own line before the function, numbered from 1 in table order:
//   #l1 = {register: [(0,1), (0,2)] lane: [...] warp: [...] block: [] -> dim0:64 dim1:32}
//   func @name(%a: ptr<f32>) attributes {num_ctas = 1, num_warps = 4, warp_size = 32} { ... }
// and its types name their layouts: tile<64x32xf32, #l1>, smem<2x64x32xbf16, #l3>.
// Nested ops are indented two spaces a level, up to 32 levels (deeper ones
// line up with the 32nd, so output stays linear in the IR's size). The
// parser (parser.h) reads exactly this form back.
#pragma once

#include <string>

#include "ir/export.h"
#include "ir/ir.h"

TILEDSL_SHARED_BEGIN

namespace tl::ir {

struct PrintOptions {
  bool locations = true;  // print loc(...) suffixes
};

std::string print(const Function& fn, const PrintOptions& opts = {});
std::string print(const Module& m, const PrintOptions& opts = {});

}  // namespace tl::ir

TILEDSL_SHARED_END
