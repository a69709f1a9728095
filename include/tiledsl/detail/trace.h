// The tracer boundary: the small API through which the header-only front end
// (tile.h, the op headers, control.h, compile.h) records a kernel into Tile
// IR. Implemented in lib/frontend/trace.cpp on top of lib/ir; nothing here
// exposes an IR object, only opaque `ir::Value*` handles and the shared
// vocabulary of ir_types.h, so kernel code never sees lib/ headers.
//
// Model
// - One trace is active per thread, between trace_begin and trace_end
//   (tl::compile does this). Every call below outside a trace throws a
//   tl::Error naming the caller's line ("... expected to run inside
//   tl::compile, found no active trace").
// - Traced C++ variables (tl::tile<E>) are handles to *slots*. A slot holds
//   the variable's current SSA value; copy-construction makes a new slot,
//   assignment writes the slot. Loops and ifs compare slots at entry and exit
//   to find loop-carried values (see loop_begin / loop_end).
// - Ops are appended at the current insertion point: the function body, or
//   the body of the innermost open loop / if branch / combine region.
#pragma once
// The libraries are built with hidden visibility; what this header declares
// is their interface (CMakeLists.txt: "Exported symbols").
#pragma GCC visibility push(default)

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "tiledsl/detail/ir_types.h"

namespace tl::ir {
class Value;
class Function;
}  // namespace tl::ir

namespace tl::detail {

using ir::Value;

// A non-owning reference to a callable (cheaper to include than <functional>).
template <class Sig>
class function_ref;
template <class R, class... A>
class function_ref<R(A...)> {
 public:
  template <class F, class = std::enable_if_t<!std::is_same_v<std::decay_t<F>, function_ref>>>
  function_ref(F&& f)
      : obj_(const_cast<void*>(static_cast<const void*>(&f))),
        call_([](void* o, A... a) -> R { return (*static_cast<std::remove_reference_t<F>*>(o))(a...); }) {}
  R operator()(A... a) const { return call_(obj_, a...); }

 private:
  void* obj_;
  R (*call_)(void*, A...);
};

// ---- errors ---------------------------------------------------------------

// Throws tl::Error "file:line: <op>: <msg>" (msg is "expected ..., found ...").
[[noreturn]] void fail(const ir::Loc& loc, std::string_view op, const std::string& msg);

// True while a trace is active on this thread.
bool tracing();

// ---- trace lifetime (used by tl::compile) ---------------------------------

// Starts a trace of a function `name` whose parameters have `params` types;
// returns the parameters' values. Fails if a trace is already active.
std::vector<Value*> trace_begin(const std::string& name, const std::vector<ir::Type>& params, const ir::Loc& loc);
// Ends the trace: reports the first pending error (e.g. a loop left by
// `break`), checks every loop/if was closed, and hands over the function.
// The caller owns the result (an ir::Function allocated with new).
ir::Function* trace_end();
// Discards the active trace (after an exception). Never throws.
void trace_abort() noexcept;

// ---- values and ops -------------------------------------------------------

ir::Type type_of(const Value* v);

// Appends an op at the insertion point and returns its results.
std::vector<Value*> emit(ir::OpKind kind, const std::vector<Value*>& operands, const std::vector<ir::Type>& results,
                         ir::Attrs attrs, const ir::Loc& loc);
// Single-result form.
Value* emit1(ir::OpKind kind, const std::vector<Value*>& operands, const ir::Type& result, ir::Attrs attrs,
             const ir::Loc& loc);

// ---- slots ------------------------------------------------------------------

// Slot handles are opaque 64-bit ids (trace generation | index), so a handle
// that outlives its trace is detected rather than dereferenced.
using SlotId = uint64_t;
inline constexpr SlotId kNoSlot = 0;

SlotId slot_new(Value* v, const ir::Loc& loc);
// The current value; throws when the slot's trace is not the active one.
Value* slot_get(SlotId s);
void slot_set(SlotId s, Value* v);
// Releases a slot; silently ignores slots of a finished trace. Never throws.
void slot_free(SlotId s) noexcept;

// ---- loops ------------------------------------------------------------------

// Opens a `for` loop over [lo, hi) by step (i32 scalars defined before the
// loop). Every live slot gets a fresh region argument of its current type, so
// that slots sharing a value (b = a) stay distinguishable; the body is then
// traced once. Returns a frame id; *iv receives the induction variable.
int64_t loop_begin(Value* lo, Value* hi, Value* step, ir::Attrs attrs, const ir::Loc& loc, Value** iv);
// Closes the loop opened as `frame`: slots still holding their own region
// argument are not carried (the argument is replaced by the entry value and
// dropped); the others become iter_args (init = entry value, yield = exit
// value) and are set to the for op's results. A slot whose type changed is an
// error naming both lines.
void loop_end(int64_t frame);
// Called when the loop's range dies with the body still open (break, return,
// exception). Pops the frame and, if `record_error`, remembers an error that
// trace_end reports. Never throws.
void loop_abandon(int64_t frame, bool record_error) noexcept;

// Emits `while`: `cond_fn` traced into the condition region returns the
// condition (a scalar i1; it must not assign variables from outside it),
// then `body_fn` is traced into the body. Slots the body assigns are
// carried (both regions get their argument) and then hold the loop's
// results; the others are read as their entry values in both regions.
void trace_while(const ir::Loc& loc, function_ref<Value*()> cond_fn, function_ref<void()> body_fn);

// ---- if ---------------------------------------------------------------------

// Emits `if cond` (a scalar i1), tracing `then_fn` and (if non-null)
// `else_fn` into its two regions. Slots changed by either branch become the
// op's results; a branch that did not change a slot yields its old value.
void trace_if(Value* cond, const ir::Loc& loc, function_ref<void()> then_fn, const function_ref<void()>* else_fn);

// ---- combine regions (reduce, scan) ---------------------------------------

// Emits a reduce or scan op over `operands` with result types `results`.
// Its region gets arguments (lhs..., rhs...) of the operands' scalar types;
// `combine` receives them and returns the values to yield. The combine
// function must not assign traced variables from outside it.
std::vector<Value*> emit_combine(ir::OpKind kind, const std::vector<Value*>& operands,
                                 const std::vector<ir::Type>& results, ir::Attrs attrs, const ir::Loc& loc,
                                 function_ref<std::vector<Value*>(const std::vector<Value*>&)> combine);

}  // namespace tl::detail

#pragma GCC visibility pop
