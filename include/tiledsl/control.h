// Traced control flow.
//
//   for (auto k : tl::range(0, K, BK, {.num_stages = 3})) { acc = ...; }
//   tl::if_(pid == 0, [&] { x = x + 1; }, [&] { y = y * 2; });
//
// The loop body is traced once: the first `!=` of the range-for opens a `for`
// op, `++` closes it. Traced variables that exist before the loop and are
// assigned in it become loop-carried values (see detail/trace.h). A `break`
// or `return` leaves the body unclosed: the range notices when it is
// destroyed and tl::compile fails with the loop's line. (`continue` is fine:
// it skips the rest of the C++ body, which at trace time is the same thing.)
// Plain C++ loops and `if constexpr` unroll / select at trace time.
#pragma once

#include <optional>
#include <exception>
#include <source_location>
#include <type_traits>

#include "tiledsl/tile.h"

namespace tl {

// Software pipelining (GPU targets with asynchronous copies): tile loads in
// the loop are issued num_stages - 1 iterations ahead into shared memory.
// Loads that feed dots always qualify; other loads qualify in loops that
// store nothing, or when the loop names its own num_stages here: that is
// the author's promise that no iteration stores to memory a later
// iteration's loads read. Loads the same in every iteration (a weight
// vector) then come from shared memory, copied once before the loop.
struct RangeOptions {
  int num_stages = -1;  // software-pipelining depth, >= 1 (1: none); -1: CompileOptions::num_stages
  // Warp specialization of this loop (CompileOptions::warp_specialize,
  // which it overrides): false forbids it, true demands it (an error where
  // the loop cannot have it); unset, the kernel's option decides.
  std::optional<bool> warp_specialize = std::nullopt;
};

namespace detail {
// A loop bound: a C++ integer or a traced scalar<i32>.
struct bound {
  Operand op;
  template <class N>
    requires std::is_integral_v<N>
  bound(N n) : op(Operand::number(n)) {}
  bound(const tile<int32_t>& t) : op(t.value()) {}
};
}  // namespace detail

class range {
 public:
  range(detail::bound lo, detail::bound hi, detail::bound step = 1, RangeOptions opts = {},
        std::source_location w = std::source_location::current())
      : lo_(lo.op), hi_(hi.op), step_(step.op), opts_(opts), loc_(detail::to_loc(w)) {}
  range(const range&) = delete;
  range& operator=(const range&) = delete;
  ~range() {
    // Destroyed with the body open: `break`, `return` or an exception.
    if (state_ == State::Open) detail::loop_abandon(frame_, std::uncaught_exceptions() <= uncaught_at_open_);
  }

  struct sentinel {};
  class iterator {
   public:
    explicit iterator(range* r) : r_(r) {}
    bool operator!=(sentinel) const { return r_->advance(); }
    void operator++() { r_->close(); }
    scalar<int32_t> operator*() const { return scalar<int32_t>(r_->iv_); }

   private:
    range* r_;
  };
  iterator begin() { return iterator(this); }
  sentinel end() { return {}; }

 private:
  enum class State { Fresh, Open, Closed };
  // First call opens the loop (the body follows); after `++` it ends the C++ loop.
  bool advance() {
    if (state_ == State::Closed) return false;
    if (state_ == State::Open) detail::fail(loc_, "range", "expected ++ to close the loop body, found a second test");
    ir::Attrs attrs;
    // Any value but the default is recorded, so that tl::compile rejects a bad one at this line.
    if (opts_.num_stages != -1) attrs["num_stages"] = int64_t(opts_.num_stages);
    if (opts_.warp_specialize) attrs["warp_specialize"] = int64_t(*opts_.warp_specialize);
    detail::Value* lo = detail::loop_bound(lo_, loc_, "lower bound");
    detail::Value* hi = detail::loop_bound(hi_, loc_, "upper bound");
    detail::Value* step = detail::loop_bound(step_, loc_, "step");
    frame_ = detail::loop_begin(lo, hi, step, attrs, loc_, &iv_);
    uncaught_at_open_ = std::uncaught_exceptions();
    state_ = State::Open;
    return true;
  }
  void close() {
    detail::loop_end(frame_);
    state_ = State::Closed;
  }

  detail::Operand lo_, hi_, step_;
  RangeOptions opts_;
  ir::Loc loc_;
  State state_ = State::Fresh;
  int64_t frame_ = 0;
  int uncaught_at_open_ = 0;
  detail::Value* iv_ = nullptr;
};

// Traced conditional on a scalar bool. Variables assigned in a branch become
// the if's results (the other branch keeps their old value).
template <class Then>
void if_(detail::located<bool> cond, Then&& then_fn) {
  detail::trace_if(cond.t.value(), cond.loc(), detail::function_ref<void()>(then_fn), nullptr);
}
template <class Then, class Else>
void if_(detail::located<bool> cond, Then&& then_fn, Else&& else_fn) {
  detail::function_ref<void()> else_ref(else_fn);
  detail::trace_if(cond.t.value(), cond.loc(), detail::function_ref<void()>(then_fn), &else_ref);
}

}  // namespace tl
