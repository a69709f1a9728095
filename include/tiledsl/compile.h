// tl::compile: traces a kernel function into Tile IR, verifies and simplifies
// it, and returns a tl::Kernel ready for tl::Device::launch.
//
//   template <int BLOCK> void vector_add(tl::ptr<float> x, ..., tl::scalar<int32_t> n);
//   tl::Kernel k = tl::compile(vector_add<1024>, {.name = "vector_add"});
//
// Parameters are deduced from the signature: each must be tl::ptr<T> or
// tl::scalar<T> (by value or const reference).
#pragma once
// The libraries are built with hidden visibility; what this header declares
// is their interface (CMakeLists.txt: "Exported symbols").
#pragma GCC visibility push(default)

#include <cstddef>
#include <source_location>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "tiledsl/runtime.h"
#include "tiledsl/tile.h"

namespace tl {

namespace detail {
template <class P>
struct kernel_param : std::false_type {};
template <class E>
struct kernel_param<tile<E>> : std::true_type {};

// Verifies and simplifies a traced function (owned from here on) and wraps it.
Kernel finish_compile(ir::Function* fn, const CompileOptions& opts);
// Inside a catch block: ends the trace and rethrows the root cause (a pending
// error such as a loop left by `break`, else the exception being handled).
[[noreturn]] void trace_rethrow();

template <class... P, size_t... I>
void call_kernel(void (*fn)(P...), const std::vector<Value*>& args, std::index_sequence<I...>) {
  fn(std::decay_t<P>(args[I])...);
}
}  // namespace detail

namespace detail {
// Traces `fn` into a new function (owned by the caller) without verifying or
// simplifying it; tl::compile and the front end's tests use it.
template <class... P>
ir::Function* trace_kernel(void (*fn)(P...), const std::string& name, const ir::Loc& loc) {
  static_assert((kernel_param<std::decay_t<P>>::value && ...),
                "kernel parameters must be tl::ptr<T> or tl::scalar<T>");
  std::vector<ir::Type> params{scalar_type_of<typename std::decay_t<P>::element_type>()...};
  std::vector<Value*> args = trace_begin(name, params, loc);
  try {
    call_kernel(fn, args, std::index_sequence_for<P...>{});
  } catch (...) {
    trace_rethrow();
  }
  return trace_end();
}
}  // namespace detail

template <class... P>
Kernel compile(void (*fn)(P...), CompileOptions opts = {}, std::source_location w = std::source_location::current()) {
  if (opts.name.empty()) opts.name = "kernel";
  return detail::finish_compile(detail::trace_kernel(fn, opts.name, detail::to_loc(w)), opts);
}

// Captureless lambdas.
template <class F>
  requires requires(F f) { +f; }
Kernel compile(F f, CompileOptions opts = {}, std::source_location w = std::source_location::current()) {
  return compile(+f, std::move(opts), w);
}

}  // namespace tl

#pragma GCC visibility pop
