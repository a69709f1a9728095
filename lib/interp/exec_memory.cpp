// Memory ops: load, store, atomic_rmw, atomic_cas. Every unmasked lane's
// address is checked (inside the buffer its pointer was derived from, see
// memory.h, and aligned to the element size) and translated to host memory
// before any lane touches memory, so a bad access reports and changes nothing.
// The grid runs sequentially, so atomics are plain read-modify-writes in lane
// order.
#include <cstring>

#include "interp/element.h"
#include "interp/program.h"

namespace tl::interp {

namespace {

using K = ir::OpKind;

int64_t step_of(const Slot& s) { return s.n == 1 ? 0 : 1; }

const char* verb(K k) {
  switch (k) {
    case K::Load: return "load";
    case K::Store: return "store";
    case K::AtomicRmw: return "atomic_rmw";
    default: return "atomic_cas";
  }
}

// Fills ex.hosts with each lane's host address (null for masked-off lanes);
// fails on the first unmasked lane whose element is outside its buffer or
// not aligned.
void check_access(Exec& ex, const Instr& in, const Slot* mask) {
  const Slot& ptr = ex.slots[size_t(in.in[0])];
  uint64_t size = uint64_t(byte_size(in.dtype));
  int64_t sm = mask ? step_of(*mask) : 0;
  ex.hosts.resize(size_t(ptr.n));
  for (int64_t k = 0; k < ptr.n; ++k) {
    if (mask && !mask->i[size_t(k * sm)]) {
      ex.hosts[size_t(k)] = nullptr;
      continue;
    }
    uint64_t addr = uint64_t(ptr.i[size_t(k)]);
    unsigned char* host = addr % size == 0 ? ex.mem.translate(addr, size) : nullptr;
    ex.hosts[size_t(k)] = host;
    if (host) continue;
    const ir::Type& pt = ex.type_of(in.in[0]);
    std::string where = pt.is_tile() ? " at index " + index_str(pt.shape, k) + " of a " + pt.str() : " of a " + pt.str();
    if (addr % size != 0)
      ex.fail(in, std::string(verb(in.kind)) + (in.kind == K::Load ? " from" : in.kind == K::Store ? " to" : " on") +
                      " a misaligned address" + where + ": address " + hex_address(addr) +
                      " is not a multiple of " + std::to_string(size) + " (the size of " +
                      std::string(dtype_name(in.dtype)) + ")");
    ex.fail(in, std::string(verb(in.kind)) + " out of bounds" + where + ": " + ex.mem.describe_miss(addr, size));
  }
}

template <DType D>
void load(Exec& ex, const Instr& in) {
  using V = StorageOf<D>;
  const Slot& ptr = ex.slots[size_t(in.in[0])];
  const Slot* mask = in.in.size() > 1 ? &ex.slots[size_t(in.in[1])] : nullptr;
  const Slot* other = in.in.size() > 2 ? &ex.slots[size_t(in.in[2])] : nullptr;
  check_access(ex, in, mask);
  Slot& r = ex.slots[size_t(in.out[0])];
  r.resize(ptr.n);
  auto& rv = [&]() -> auto& { if constexpr (is_float(D)) return r.f; else return r.i; }();
  if (!mask) {
    for (int64_t k = 0; k < ptr.n; ++k) rv[size_t(k)] = read_elem<D>(ex.hosts[size_t(k)]);
    return;
  }
  int64_t sm = step_of(*mask), so = other ? step_of(*other) : 0;
  for (int64_t k = 0; k < ptr.n; ++k) {
    if (mask->i[size_t(k * sm)]) {
      rv[size_t(k)] = read_elem<D>(ex.hosts[size_t(k)]);
    } else if (other) {
      if constexpr (is_float(D)) rv[size_t(k)] = other->f[size_t(k * so)];
      else rv[size_t(k)] = other->i[size_t(k * so)];
    } else {
      rv[size_t(k)] = V(0);
    }
  }
}

template <DType D>
void store(Exec& ex, const Instr& in) {
  const Slot& ptr = ex.slots[size_t(in.in[0])];
  const Slot& val = ex.slots[size_t(in.in[1])];
  const Slot* mask = in.in.size() > 2 ? &ex.slots[size_t(in.in[2])] : nullptr;
  check_access(ex, in, mask);
  int64_t sv = step_of(val), sm = mask ? step_of(*mask) : 0;
  for (int64_t k = 0; k < ptr.n; ++k) {
    if (mask && !mask->i[size_t(k * sm)]) continue;
    if constexpr (is_float(D)) write_elem<D>(ex.hosts[size_t(k)], val.f[size_t(k * sv)]);
    else write_elem<D>(ex.hosts[size_t(k)], val.i[size_t(k * sv)]);
  }
}

template <DType D>
StorageOf<D> combine(AtomicKind kind, StorageOf<D> old, StorageOf<D> v) {
  if constexpr (is_float(D)) {
    switch (kind) {
      case AtomicKind::add: return round_float<D>(old + v);
      case AtomicKind::max: return fmax_nan(old, v);
      case AtomicKind::min: return fmin_nan(old, v);
      default: return v;  // xchg (bitwise kinds are rejected at compile time)
    }
  } else {
    constexpr bool uns = !is_signed(D);
    switch (kind) {
      case AtomicKind::add: return wrap_int<D>(uint64_t(old) + uint64_t(v));
      case AtomicKind::max: return (uns ? uint64_t(old) >= uint64_t(v) : old >= v) ? old : v;
      case AtomicKind::min: return (uns ? uint64_t(old) <= uint64_t(v) : old <= v) ? old : v;
      case AtomicKind::xchg: return v;
      case AtomicKind::and_: return old & v;
      case AtomicKind::or_: return old | v;
      case AtomicKind::xor_: return wrap_int<D>(uint64_t(old ^ v));
    }
    return v;
  }
}

template <DType D>
void atomic_rmw(Exec& ex, const Instr& in) {
  const Slot& ptr = ex.slots[size_t(in.in[0])];
  const Slot& val = ex.slots[size_t(in.in[1])];
  const Slot* mask = in.in.size() > 2 ? &ex.slots[size_t(in.in[2])] : nullptr;
  check_access(ex, in, mask);
  Slot& r = ex.slots[size_t(in.out[0])];
  r.resize(ptr.n);
  auto& rv = [&]() -> auto& { if constexpr (is_float(D)) return r.f; else return r.i; }();
  const auto& vv = [&]() -> const auto& { if constexpr (is_float(D)) return val.f; else return val.i; }();
  int64_t sv = step_of(val), sm = mask ? step_of(*mask) : 0;
  auto kind = AtomicKind(in.int_attr);
  for (int64_t k = 0; k < ptr.n; ++k) {
    if (mask && !mask->i[size_t(k * sm)]) {
      rv[size_t(k)] = 0;  // masked-off lanes return 0 and touch nothing
      continue;
    }
    unsigned char* p = ex.hosts[size_t(k)];
    auto old = read_elem<D>(p);
    write_elem<D>(p, combine<D>(kind, old, vv[size_t(k * sv)]));
    rv[size_t(k)] = old;
  }
}

template <DType D>
void atomic_cas(Exec& ex, const Instr& in) {
  const Slot& ptr = ex.slots[size_t(in.in[0])];
  const Slot& cmp = ex.slots[size_t(in.in[1])];
  const Slot& val = ex.slots[size_t(in.in[2])];
  check_access(ex, in, nullptr);
  Slot& r = ex.slots[size_t(in.out[0])];
  r.resize(ptr.n);
  auto& rv = [&]() -> auto& { if constexpr (is_float(D)) return r.f; else return r.i; }();
  const auto& cv = [&]() -> const auto& { if constexpr (is_float(D)) return cmp.f; else return cmp.i; }();
  const auto& vv = [&]() -> const auto& { if constexpr (is_float(D)) return val.f; else return val.i; }();
  int64_t sc = step_of(cmp), sv = step_of(val);
  constexpr size_t size = size_t(byte_size(D));
  for (int64_t k = 0; k < ptr.n; ++k) {
    unsigned char* p = ex.hosts[size_t(k)];
    rv[size_t(k)] = read_elem<D>(p);
    // Compares bit patterns, as the hardware does (so -0 != +0, NaN == NaN).
    unsigned char expected[8] = {};
    write_elem<D>(expected, cv[size_t(k * sc)]);
    if (std::memcmp(p, expected, size) == 0) write_elem<D>(p, vv[size_t(k * sv)]);
  }
}

}  // namespace

void exec_memory(Exec& ex, const Instr& in) {
  dispatch_dtype(in.dtype, [&](auto d) {
    constexpr DType D = decltype(d)::value;
    switch (in.kind) {
      case K::Load: return load<D>(ex, in);
      case K::Store: return store<D>(ex, in);
      case K::AtomicRmw: return atomic_rmw<D>(ex, in);
      default: return atomic_cas<D>(ex, in);
    }
  });
}

}  // namespace tl::interp
