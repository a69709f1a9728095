// Traced control flow.
//
//   for (auto k : tl::range(0, K, BK, {.num_stages = 3})) { acc = ...; }
//   tl::if_(pid == 0, [&] { x = x + 1; }, [&] { y = y * 2; });
//   tl::while_([&] { return i < n; }, [&] { i = i + step; });
//
// The loop body is traced once: the first `!=` of the range-for opens a `for`
// op, `++` closes it. Traced variables that exist before the loop and are
// assigned in it become loop-carried values (see detail/trace.h). A `break`
// or `return` leaves the body unclosed: the range notices when it is
// destroyed and tl::compile fails with the loop's line. (`continue` is fine:
// it skips the rest of the C++ body, which at trace time is the same thing.)
// Plain C++ loops and `if constexpr` unroll / select at trace time.
#pragma once
// The libraries are built with hidden visibility; what this header declares
// is their interface (CMakeLists.txt: "Exported symbols").
#pragma GCC visibility push(default)

#include <optional>
#include <exception>
#include <limits>
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
// A loop bound: a C++ integer or a traced scalar<int32_t> / scalar<int64_t>.
struct bound {
  Operand op;
  template <class N>
    requires std::is_integral_v<N>
  bound(N n) : op(Operand::number(n)) {}
  bound(const tile<int32_t>& t) : op(t.value()) {}
  bound(const tile<int64_t>& t) : op(t.value()) {}
};
// A range's induction type: i64 when a bound is a traced i64 scalar.
template <class... B>
using range_index_t = std::conditional_t<(std::is_same_v<std::decay_t<B>, tile<int64_t>> || ...), int64_t, int32_t>;
}  // namespace detail

// for (auto i : tl::range(lo, hi, step)): `i` is a scalar<int32_t>, or a
// scalar<int64_t> when a bound is one (or for tl::range<int64_t>, whose C++
// integer bounds may then pass 32 bits; an i32 scalar bound is widened).
// The trip count is ceil((hi - lo) / step) for a positive step, 0 when
// hi <= lo; a negative step must be a C++ integer: i runs lo, lo + step, ...
// while i > hi (Python's range(10, 0, -3) is 10, 7, 4, 1).
template <class Index = int32_t>
class range {
  static_assert(std::is_same_v<Index, int32_t> || std::is_same_v<Index, int64_t>,
                "tl::range: the induction variable is int32_t or int64_t");

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
    scalar<Index> operator*() const { return scalar<Index>(r_->iv_); }

   private:
    range* r_;
  };
  iterator begin() { return iterator(this); }
  sentinel end() { return {}; }

 private:
  enum class State { Fresh, Open, Closed };
  static constexpr DType kIndex = std::is_same_v<Index, int64_t> ? DType::i64 : DType::i32;
  // First call opens the loop (the body follows); after `++` it ends the C++ loop.
  bool advance() {
    if (state_ == State::Closed) return false;
    if (state_ == State::Open) detail::fail(loc_, "range", "expected ++ to close the loop body, found a second test");
    ir::Attrs attrs;
    // Any value but the default is recorded, so that tl::compile rejects a bad one at this line.
    if (opts_.num_stages != -1) attrs["num_stages"] = int64_t(opts_.num_stages);
    if (opts_.warp_specialize) attrs["warp_specialize"] = int64_t(*opts_.warp_specialize);
    // A negative step (a C++ integer) runs the loop from hi up by -step;
    // the body maps that index i' back: i = lo - (i' - hi).
    bool down = step_.is_literal() && step_.lit == detail::LitKind::Int && !step_.big_unsigned && step_.i < 0;
    if (step_.is_literal() && step_.i == 0 && !down)
      detail::fail(loc_, "range", "expected a nonzero step, found 0");
    if (down) {
      if (step_.i == std::numeric_limits<int64_t>::min() ||
          (kIndex == DType::i32 && step_.i < std::numeric_limits<int32_t>::min()))
        detail::fail(loc_, "range", "expected a step whose negation fits the induction type, found " +
                                        std::to_string(step_.i));
      step_.i = -step_.i;
    }
    detail::Value* lo = detail::loop_bound(lo_, kIndex, loc_, "lower bound");
    detail::Value* hi = detail::loop_bound(hi_, kIndex, loc_, "upper bound");
    detail::Value* step = detail::loop_bound(step_, kIndex, loc_, "step");
    frame_ = down ? detail::loop_begin(hi, lo, step, attrs, loc_, &iv_) : detail::loop_begin(lo, hi, step, attrs, loc_, &iv_);
    if (down) {
      detail::Value* k = detail::emit1(ir::OpKind::Sub, {iv_, hi}, ir::scalar_type(kIndex), {}, loc_);
      iv_ = detail::emit1(ir::OpKind::Sub, {lo, k}, ir::scalar_type(kIndex), {}, loc_);
    }
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

template <class Lo, class Hi>
range(Lo, Hi) -> range<detail::range_index_t<Lo, Hi>>;
template <class Lo, class Hi, class Step>
range(Lo, Hi, Step) -> range<detail::range_index_t<Lo, Hi, Step>>;
template <class Lo, class Hi, class Step>
range(Lo, Hi, Step, RangeOptions) -> range<detail::range_index_t<Lo, Hi, Step>>;
template <class Lo, class Hi, class Step>
range(Lo, Hi, Step, RangeOptions, std::source_location) -> range<detail::range_index_t<Lo, Hi, Step>>;

// Traced while loop: `cond` returns a scalar<bool> computed from the
// variables as they are before each iteration (it may have effects, as a
// spin lock's atomic_cas; it must not assign variables from outside it),
// and `body` runs while it is true. As in tl::range, variables the body
// assigns are carried from one iteration to the next and hold their final
// values after the loop.
//   tl::while_([&] { return i < n; }, [&] { acc = acc * x; i = i + 1; });
template <class Cond, class Body>
void while_(Cond&& cond, Body&& body, std::source_location w = std::source_location::current()) {
  static_assert(std::is_same_v<std::decay_t<std::invoke_result_t<Cond&>>, tile<bool>>,
                "tl::while_: the condition must return a scalar<bool> (a traced comparison)");
  auto cond_value = [&]() -> detail::Value* { return cond().value(); };
  detail::trace_while(detail::to_loc(w), detail::function_ref<detail::Value*()>(cond_value),
                      detail::function_ref<void()>(body));
}

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

#pragma GCC visibility pop
