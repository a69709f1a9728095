// Compile time against kernel size. Every Tile IR stage that tl::compile or
// the GPU path runs over a whole function (parse, verify, print,
// canonicalize, cse, dce, the simplify pipeline, axis analysis) is timed
// alone on generated functions of 1k to 100k ops, and reported as time per
// op (`ns_per_op`): a linear stage keeps it flat across sizes. Kernels that
// C++ loops unroll at trace time reach these sizes, so a superlinear stage is
// a compile-time cliff users hit (issue 11: cse took 20 s at 80k ops).
//
// Shapes of function (`ops` counts every op, nested ones included):
//   line    constant/add pairs on one running value; the constants repeat,
//           so cse merges most of them (the input issue 11 measured)
//   fold    adds of constants, each folding into the next (canonicalize)
//   nested  blocks of for { if { ... } else { ... } } nested four deep, with
//           carried values and a little arithmetic at each level
//   deep    one nest of for/if at ir::kMaxRegionDepth levels, the ops spread
//           over the levels (a stage doing work per level per op shows here)
// and `trace/unrolled`: tl::compile (trace, verify, simplify) of a kernel
// whose C++ loop adds 1.0f to a tile N times (`ns_per_op` per unrolled add);
// and `codegen/parallel/T`: four configurations of the gemm example's
// persistent kernel compiled for sm_90a (GPU passes, LLVM, PTX) on T
// threads at once, the wall time of the four (what the autotuner's
// parallel compile gains on T cores).
//
//   bench_compile_scaling --benchmark_format=json --benchmark_out=compile.json
//   bench_compile_scaling --benchmark_filter='cse/line'
//
// Times are the CPU time of the thread running the stage (each is
// single-threaded), which a loaded machine inflates less than wall time.
// Uses the compiler's internal headers (lib/), unlike the other benchmarks:
// what it measures is the stages themselves.
#include <benchmark/benchmark.h>

#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "../examples/kernels/gemm.h"
#include "codegen/compile.h"

#include "ir/ir.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "tiledsl/tiledsl.h"
#include "transforms/axis_analysis.h"
#include "transforms/passes.h"

namespace {

using tl::DType;
using tl::ir::OpKind;
using tl::ir::Type;
using tl::ir::Value;

const Type kI32 = tl::ir::scalar_type(DType::i32);
const Type kI1 = tl::ir::scalar_type(DType::i1);

// A generated function and the number of ops in it.
struct Generated {
  std::unique_ptr<tl::ir::Function> fn;
  int64_t ops = 0;
};

int64_t count_ops(tl::ir::Region& r) {
  int64_t n = 0;
  tl::ir::walk(r, [&](tl::ir::Op*) { ++n; });
  return n;
}

// The function every shape starts from: (%p: ptr<i32>, %n: i32), a running
// value %x = program_id; `finish` stores the running value, which keeps
// everything that computes it.
struct Start {
  std::unique_ptr<tl::ir::Function> fn = std::make_unique<tl::ir::Function>();
  Value* p;
  Value* n;
  tl::ir::Builder b;
  Value* x;
  Start() {
    fn->name = "scaling";
    p = fn->body.add_arg(tl::ir::ptr_type(DType::i32));
    n = fn->body.add_arg(kI32);
    b = tl::ir::Builder(&fn->body);
    x = b.create1(OpKind::ProgramId, {}, kI32, {{"axis", int64_t(0)}});
  }
  Generated finish() {
    b.set_insertion_end(&fn->body);
    b.create(OpKind::Store, {p, x}, {});
    Generated g{std::move(fn), 0};
    g.ops = count_ops(g.fn->body);
    return g;
  }
};

Generated line(int64_t ops) {
  Start s;
  for (int64_t i = 0; 2 * i + 3 < ops; ++i)
    s.x = s.b.create1(OpKind::Add, {s.x, s.b.constant_int(kI32, i % 8)}, kI32);
  return s.finish();
}

Generated fold(int64_t ops) {
  Start s;
  Value* one = s.b.constant_int(kI32, 1);
  Value* acc = one;
  for (int64_t i = 0; i + 4 < ops; ++i) acc = s.b.create1(OpKind::Add, {acc, one}, kI32);
  s.x = s.b.create1(OpKind::Add, {s.x, acc}, kI32);
  return s.finish();
}

// Appends `levels` alternating for/if levels at the builder's position,
// each with `per_level` constant/add pairs on the running value, and
// returns the value the nest produces. Loops carry the running value; ifs
// return it (the else branch passes it through).
Value* nest(tl::ir::Builder& b, Value* n, Value* x, int levels, int64_t per_level) {
  auto work = [&](Value* v) {
    for (int64_t i = 0; i < per_level; ++i) v = b.create1(OpKind::Add, {v, b.constant_int(kI32, i % 8)}, kI32);
    return v;
  };
  x = work(x);
  if (levels == 0) return x;
  tl::ir::Region* outer = b.region();
  tl::ir::Op* op;
  if (levels % 2 == 0) {
    op = b.create(OpKind::For, {b.constant_int(kI32, 0), n, b.constant_int(kI32, 1), x}, {kI32});
    tl::ir::Region* body = op->add_region();
    body->add_arg(kI32);
    Value* carried = body->add_arg(kI32);
    b.set_insertion_end(body);
    Value* next = nest(b, n, b.create1(OpKind::Add, {carried, body->args[0].get()}, kI32), levels - 1, per_level);
    b.create(OpKind::Yield, {next}, {});
  } else {
    Value* cond = b.create1(OpKind::Cmp, {x, n}, kI1, {{"pred", std::string("lt")}});
    op = b.create(OpKind::If, {cond}, {kI32});
    b.set_insertion_end(op->add_region());
    b.create(OpKind::Yield, {nest(b, n, x, levels - 1, per_level)}, {});
    b.set_insertion_end(op->add_region());
    b.create(OpKind::Yield, {x}, {});
  }
  b.set_insertion_end(outer);
  return op->result();
}

Generated nested(int64_t ops) {
  Start s;
  constexpr int kLevels = 4;
  constexpr int64_t kPerLevel = 4;  // about 60 ops a block
  int64_t block_ops = 0;
  {
    Start probe;
    nest(probe.b, probe.n, probe.x, kLevels, kPerLevel);
    block_ops = count_ops(probe.fn->body) - 1;
  }
  for (int64_t made = 3; made + block_ops <= ops; made += block_ops) s.x = nest(s.b, s.n, s.x, kLevels, kPerLevel);
  return s.finish();
}

Generated deep(int64_t ops) {
  Start s;
  const int levels = tl::ir::kMaxRegionDepth;
  s.x = nest(s.b, s.n, s.x, levels, std::max<int64_t>(1, ops / (3 * (levels + 1))));
  return s.finish();
}

using Shape = Generated (*)(int64_t);

double thread_seconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

// Runs `stage` on a fresh copy of the shape each iteration; only the stage
// is timed.
void run(benchmark::State& state, Shape shape, const std::function<void(tl::ir::Function&)>& stage) {
  double seconds = 0;
  int64_t ops = 0;
  for (auto _ : state) {
    Generated g = shape(state.range(0));
    ops = g.ops;
    double t0 = thread_seconds();
    stage(*g.fn);
    double s = thread_seconds() - t0;
    state.SetIterationTime(s);
    seconds += s;
  }
  state.counters["ops"] = double(ops);
  state.counters["ns_per_op"] = benchmark::Counter(seconds * 1e9 / double(ops), benchmark::Counter::kAvgIterations);
}

// Parsing times reading the printed text of the shape.
void run_parse(benchmark::State& state, Shape shape) {
  double seconds = 0;
  int64_t ops = 0;
  for (auto _ : state) {
    Generated g = shape(state.range(0));
    ops = g.ops;
    std::string text = tl::ir::print(*g.fn);
    double t0 = thread_seconds();
    auto m = tl::ir::parse(text);
    double s = thread_seconds() - t0;
    benchmark::DoNotOptimize(m.get());
    state.SetIterationTime(s);
    seconds += s;
  }
  state.counters["ops"] = double(ops);
  state.counters["ns_per_op"] = benchmark::Counter(seconds * 1e9 / double(ops), benchmark::Counter::kAvgIterations);
}

// The kernel of `trace/unrolled`: its C++ loop runs g_unroll times.
int g_unroll = 0;
void unrolled(tl::ptr<float> x, tl::ptr<float> y) {
  auto offs = tl::arange(0, 128);  // [128] i32
  auto a = tl::load(x + offs);     // [128] f32
  for (int i = 0; i < g_unroll; ++i) a = a + 1.0f;
  tl::store(y + offs, a);
}

void run_unrolled(benchmark::State& state) {
  g_unroll = int(state.range(0));
  double seconds = 0;
  for (auto _ : state) {
    double t0 = thread_seconds();
    tl::Kernel k = tl::compile(unrolled, {.name = "unrolled"});
    double s = thread_seconds() - t0;
    benchmark::DoNotOptimize(&k);
    state.SetIterationTime(s);
    seconds += s;
  }
  state.counters["ns_per_op"] =
      benchmark::Counter(seconds * 1e9 / double(g_unroll), benchmark::Counter::kAvgIterations);
}

void run_parallel_codegen(benchmark::State& state) {
  const int threads = int(state.range(0));
  std::vector<tl::Kernel> ks;
  for (const char* c : {"128x256x64:8:3:persistent", "128x128x64:8:3:persistent", "64x128x64:4:3:persistent",
                        "128x64x64:4:3:persistent"})
    ks.push_back(kernels::compile_gemm<tl::bf16>(kernels::parse_gemm_config(c)));
  auto spec = [](const tl::Kernel& k) {
    tl::codegen::Specialization s;
    for (const auto& p : k.params())
      s.args.push_back(p.is_ptr ? tl::codegen::pointer_arg_facts(256) : tl::codegen::int_arg_facts(4096));
    return s;
  };
  for (auto _ : state) {
    auto t0 = std::chrono::steady_clock::now();
    std::atomic<size_t> next{0};
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&] {
        for (size_t i; (i = next++) < ks.size();)
          benchmark::DoNotOptimize(tl::codegen::compile(*ks[i].impl(), spec(ks[i]), "sm_90a").assembly.size());
      });
    for (auto& th : pool) th.join();
    state.SetIterationTime(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
}

const std::vector<int64_t> kSizes = {1'000, 10'000, 20'000, 40'000, 80'000, 100'000};

void register_all() {
  struct NamedShape {
    const char* name;
    Shape fn;
  };
  const NamedShape shapes[] = {{"line", line}, {"fold", fold}, {"nested", nested}, {"deep", deep}};
  using Stage = std::function<void(tl::ir::Function&)>;
  struct NamedStage {
    const char* name;
    Stage fn;
  };
  const NamedStage stages[] = {
      {"verify", [](tl::ir::Function& f) { tl::ir::verify(f); }},
      {"print", [](tl::ir::Function& f) { benchmark::DoNotOptimize(tl::ir::print(f).size()); }},
      {"canonicalize", [](tl::ir::Function& f) { tl::transforms::canonicalize(f); }},
      {"cse", [](tl::ir::Function& f) { tl::transforms::cse(f); }},
      {"dce", [](tl::ir::Function& f) { tl::transforms::dce(f); }},
      {"simplify", [](tl::ir::Function& f) { tl::transforms::simplify(f); }},
      {"axis", [](tl::ir::Function& f) { tl::transforms::AxisAnalysis a(f); }},
  };
  for (const auto& shape : shapes) {
    auto* b = benchmark::RegisterBenchmark((std::string("parse/") + shape.name).c_str(),
                                           [fn = shape.fn](benchmark::State& st) { run_parse(st, fn); });
    for (int64_t n : kSizes) b->Arg(n);
    b->UseManualTime()->Unit(benchmark::kMillisecond)->MinTime(0.05);
    for (const auto& stage : stages) {
      auto* sb = benchmark::RegisterBenchmark((std::string(stage.name) + "/" + shape.name).c_str(),
                                              [fn = shape.fn, st = stage.fn](benchmark::State& s) { run(s, fn, st); });
      for (int64_t n : kSizes) sb->Arg(n);
      sb->UseManualTime()->Unit(benchmark::kMillisecond)->MinTime(0.05);
    }
  }
  auto* t = benchmark::RegisterBenchmark("trace/unrolled", run_unrolled);
  for (int64_t n : {1'000, 5'000, 20'000, 100'000}) t->Arg(n);
  t->UseManualTime()->Unit(benchmark::kMillisecond)->MinTime(0.05);
  benchmark::RegisterBenchmark("codegen/parallel", run_parallel_codegen)
      ->Arg(1)->Arg(2)->Arg(4)->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(3);
}

}  // namespace

int main(int argc, char** argv) {
  register_all();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
