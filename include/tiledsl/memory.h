// Global memory: loads, stores, atomics; and device-side debugging.
// Masks are bool tiles that broadcast to the pointer tile's shape; `other`
// and stored values are converted to the pointee type and broadcast too.
#pragma once
// The libraries are built with hidden visibility; what this header declares
// is their interface (CMakeLists.txt: "Exported symbols").
#pragma GCC visibility push(default)

#include <source_location>
#include <string>
#include <type_traits>
#include <vector>

#include "tiledsl/tile.h"

namespace tl {

struct LoadOptions {
  std::string cache{};         // cache modifier hint ("", ".ca", ".cg", ...)
  std::string evict{};         // eviction policy hint ("", "evict_first", "evict_last")
  bool is_volatile = false;
};
struct StoreOptions {
  std::string cache{};
  std::string evict{};
};

template <class T>
tile<T> load(const ptr<T>& p, const LoadOptions& o = {}, std::source_location w = std::source_location::current()) {
  return tile<T>(detail::load(p.value(), nullptr, nullptr, o.cache, o.evict, o.is_volatile, detail::to_loc(w)));
}
// Masked-off lanes read nothing and give 0.
template <class T>
tile<T> load(const ptr<T>& p, const tile<bool>& mask, const LoadOptions& o = {},
             std::source_location w = std::source_location::current()) {
  return tile<T>(detail::load(p.value(), mask.value(), nullptr, o.cache, o.evict, o.is_volatile, detail::to_loc(w)));
}
// Masked-off lanes give `other` (a number, one of tiledsl's narrow floats,
// or a tile).
template <class T, class O>
  requires(std::is_arithmetic_v<O> || !detail::operand_of<O>::desc.is_ptr)
tile<T> load(const ptr<T>& p, const tile<bool>& mask, const O& other, const LoadOptions& o = {},
             std::source_location w = std::source_location::current()) {
  static_assert(detail::operand_of<O>::valid || detail::fill_value<O>, "`other` must be a number or a tile");
  detail::Operand other_op;
  if constexpr (detail::operand_of<O>::valid) other_op = detail::operand(other);
  else other_op = detail::fill_number(other);
  return tile<T>(detail::load(p.value(), mask.value(), &other_op, o.cache, o.evict, o.is_volatile, detail::to_loc(w)));
}

template <class T, class V>
  requires detail::operand_of<V>::valid
void store(const ptr<T>& p, const V& value, const StoreOptions& o = {},
           std::source_location w = std::source_location::current()) {
  detail::store(p.value(), detail::operand(value), nullptr, o.cache, o.evict, detail::to_loc(w));
}
template <class T, class V>
  requires detail::operand_of<V>::valid
void store(const ptr<T>& p, const V& value, const tile<bool>& mask, const StoreOptions& o = {},
           std::source_location w = std::source_location::current()) {
  detail::store(p.value(), detail::operand(value), mask.value(), o.cache, o.evict, detail::to_loc(w));
}

// An atomic's memory order and scope, as Triton's `sem` and `scope`:
// `.sem` "acq_rel" (the default), "acquire", "release" or "relaxed" says
// how it orders the program's other memory accesses around it; `.scope`
// "gpu" (the default: the whole device), "cta" (the program's own threads)
// or "sys" (the host and other devices too) says with whose accesses.
// Any other value is an error naming the line (docs/language.md, Memory).
struct AtomicOptions {
  std::string sem = "acq_rel";
  std::string scope = "gpu";
};

// Atomic read-modify-write; each returns the old values (0 where masked off).
#define TL_ATOMIC(FN, KIND)                                                                                    \
  template <class T, class V>                                                                                  \
    requires detail::operand_of<V>::valid                                                                      \
  tile<T> FN(const ptr<T>& p, const V& value, const AtomicOptions& o = {},                                     \
             std::source_location w = std::source_location::current()) {                                       \
    return tile<T>(detail::atomic_rmw(KIND, p.value(), detail::operand(value), nullptr, o.sem, o.scope,        \
                                      detail::to_loc(w)));                                                     \
  }                                                                                                            \
  template <class T, class V>                                                                                  \
    requires detail::operand_of<V>::valid                                                                      \
  tile<T> FN(const ptr<T>& p, const V& value, const tile<bool>& mask, const AtomicOptions& o = {},             \
             std::source_location w = std::source_location::current()) {                                       \
    return tile<T>(detail::atomic_rmw(KIND, p.value(), detail::operand(value), mask.value(), o.sem, o.scope,   \
                                      detail::to_loc(w)));                                                     \
  }
TL_ATOMIC(atomic_add, "add")
TL_ATOMIC(atomic_max, "max")
TL_ATOMIC(atomic_min, "min")
TL_ATOMIC(atomic_xchg, "xchg")
TL_ATOMIC(atomic_and, "and")
TL_ATOMIC(atomic_or, "or")
TL_ATOMIC(atomic_xor, "xor")
#undef TL_ATOMIC

// Where *p == cmp, stores value; returns the old value.
template <class T, class C, class V>
  requires(detail::operand_of<C>::valid && detail::operand_of<V>::valid)
tile<T> atomic_cas(const ptr<T>& p, const C& cmp, const V& value, const AtomicOptions& o = {},
                   std::source_location w = std::source_location::current()) {
  return tile<T>(detail::atomic_cas(p.value(), detail::operand(cmp), detail::operand(value), o.sem, o.scope,
                                    detail::to_loc(w)));
}

// Every thread of the program waits here until all have arrived (Triton's
// debug_barrier): their shared-memory accesses before it are done for all
// after it. The compiler already orders what it places in shared memory;
// this is for debugging, or for code that relies on the order some other
// way. On the interpreter, which runs a program's threads as one, nothing
// to wait for.
inline void debug_barrier(std::source_location w = std::source_location::current()) {
  detail::debug_barrier(detail::to_loc(w));
}

// Fails the launch where `cond` is false, with `message` and this line.
inline void device_assert(const tile<bool>& cond, const std::string& message,
                          std::source_location w = std::source_location::current()) {
  detail::device_assert(cond.value(), message, detail::to_loc(w));
}

// Prints `prefix` and the values, per program: tl::device_print("x", a, b).
// (A class so that the source line can follow the variadic values.)
template <class... E>
struct device_print {
  device_print(const std::string& prefix, const tile<E>&... values,
               std::source_location w = std::source_location::current()) {
    detail::device_print(prefix, std::vector<detail::Value*>{values.value()...}, detail::to_loc(w));
  }
};
template <class... E>
device_print(const std::string&, const tile<E>&...) -> device_print<E...>;

}  // namespace tl

#pragma GCC visibility pop
