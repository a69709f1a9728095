// Tile IR text form. Generic syntax for every op:
//   %r0, %r1 = name %a, %b {key = value, ...} : type0, type1 <regions> loc("file":line)
// Regions: "{" newline, optional "^(%x: type, ...):" argument line, ops, "}";
// an op's several regions are separated by ", ". Ops without results omit
// "= " and the ": types" part. Attributes print sorted by key: integers as
// 3, floats always with '.', 'e', inf or nan (1.0, -inf), strings quoted,
// integer arrays as [1, 0]. Functions:
//   func @name(%a: ptr<f32>, %n: i32) { ... }
// Nested ops are indented two spaces a level, up to 32 levels (deeper ones
// line up with the 32nd, so output stays linear in the IR's size). The
// parser (parser.h) reads exactly this form back.
#pragma once

#include <string>

#include "ir/ir.h"

namespace tl::ir {

struct PrintOptions {
  bool locations = true;  // print loc(...) suffixes
};

std::string print(const Function& fn, const PrintOptions& opts = {});
std::string print(const Module& m, const PrintOptions& opts = {});

}  // namespace tl::ir
