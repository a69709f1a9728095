// tiledsl: a Triton-class tile language embedded in C++. Include this header.
//
// API summary (namespace tl; details in each header):
//   types      tile<E>, scalar<E> (rank 0), ptr<T> = tile<pointer<T>>; E in dtype.h
//              (f32, bf16, f16, f8e4m3, f8e5m2, i32, ..., bool). .shape() .dtype() .rank()
//   creation   program_id(axis) num_programs(axis) arange(lo, hi) zeros<T>({..})
//              full<T>({..}, v) zeros_like(x) full_like(x, v) cdiv(a, b)      creation.h
//   shapes     expand_dims row col broadcast_to reshape trans permute join split  shape.h
//   operators  + - * / % & | ^ << >> unary - ~ !, comparisons -> tile<bool>,
//              compound assignment; numpy broadcasting; C++ numbers weakly typed tile.h
//   math       cast<T> bitcast<T> where minimum maximum clamp exp exp2 log log2
//              sqrt rsqrt sin cos tanh erf abs floor ceil sigmoid fma
//              multiple_of max_contiguous (hints)                              math.h
//   reduce     sum max min argmax argmin reduce(x, axis, combine) cumsum cumprod
//              dot(a, b[, acc][, {.input_precision}])                          reduction.h
//   standard   flip sort topk cat interleave ravel xor_sum swizzle2d (compositions of
//              the ops above, as Triton's standard.py)                         standard.h
//   random     randint randint4x rand rand4x randn randn4x philox (Triton's
//              Philox 4x32: counter-based, the same numbers on every device)  random.h
//   memory     load(p[, mask[, other]][, opts]) store(p, v[, mask][, opts])
//              atomic_add/max/min/xchg/and/or/xor atomic_cas device_assert device_print memory.h
//   descriptor make_tensor_descriptor(p, {shape}, {strides}, {block}) .load({coords})
//              .store({coords}, v): blocks of a strided tensor, 0 / unwritten outside  descriptor.h
//   control    for (auto i : range(lo, hi, step, {.num_stages})) ... ; if_(c, then[, else]) control.h
//   compile    compile(kernel_fn, {.name, .num_warps, .num_stages}) -> Kernel  compile.h
//   runtime    Device::get("interp"), upload, alloc<T>, dev(kernel, Grid{..}, args...) runtime.h
//
// Every trace-time error is a tl::Error "file:line: <op>: expected ..., found ...".
#pragma once

#include "tiledsl/autotune.h"
#include "tiledsl/compile.h"
#include "tiledsl/control.h"
#include "tiledsl/creation.h"
#include "tiledsl/descriptor.h"
#include "tiledsl/dtype.h"
#include "tiledsl/math.h"
#include "tiledsl/memory.h"
#include "tiledsl/random.h"
#include "tiledsl/reduction.h"
#include "tiledsl/runtime.h"
#include "tiledsl/shape.h"
#include "tiledsl/standard.h"
#include "tiledsl/tile.h"
