// libFuzzer target: the Tile IR text parser, the verifier and the Tile IR
// passes (lib/ir, lib/transforms), on arbitrary bytes, as tiledsl-opt runs
// them on a .tir file; then, on each Tile IR function that survives them,
// the GPU passes (pipeline.h's list) for two made-up targets (32 lanes
// with asynchronous copies, 64 without; no matrix instructions, so every
// dot takes the FMA form).
//
// Bad input must end in a tl::Error; anything else is a bug the fuzzer
// reports: a crash, a sanitizer report, a hang (libFuzzer's -timeout), or
// one of the properties below failing (abort with a message):
//   - a pass that leaves IR the verifier rejects (tiledsl-opt would name it
//     "after pass ..."; for the passes that is a bug, not bad input);
//   - a pass, or the printer, throwing anything but tl::Error;
//   - the text form not being a fixed point: printing a verified module,
//     parsing that text and printing again must give the same text, before
//     and after the passes (the FileCheck round-trip test, on every input);
//   - GPU IR from a GPU pass that the verifier rejects, or that does not
//     print and parse back to itself;
//   - a loop schedule that the lowering's rebuild (scheduled_pipeline)
//     rejects.
//
// Built by fuzz/CMakeLists.txt with clang's -fsanitize=fuzzer; replayed on
// the checked-in reproducers by a plain driver in ctest (tests/CMakeLists.txt).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <string_view>

#include "codegen/pipeline.h"
#include "codegen/pipeline_plan.h"
#include "codegen/target_info.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "tiledsl/detail/ir_types.h"
#include "transforms/axis_analysis.h"
#include "transforms/passes.h"

namespace {

[[noreturn]] void fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "fuzz_ir: %s\n%s\n", what, detail.c_str());
  std::abort();
}

// Parses `text` (which the printer wrote from a verified module) and checks
// that it verifies and prints back unchanged.
void check_round_trip(const std::string& text, const char* stage) {
  std::unique_ptr<tl::ir::Module> again;
  try {
    again = tl::ir::parse(text, "<printed>");
    tl::ir::verify(*again);
  } catch (const tl::Error& e) {
    fail(stage, std::string("printed IR does not parse or verify: ") + e.what() + "\n--- printed:\n" + text);
  }
  std::string reprinted = tl::ir::print(*again);
  if (reprinted != text) fail(stage, "print(parse(print(m))) != print(m)\n--- first:\n" + text + "\n--- second:\n" + reprinted);
}

}  // namespace

// The targets the GPU passes see (their capability records): the fuzzer
// is its own target registry, with no back end and no LLVM.
namespace {
struct FuzzTarget : tl::codegen::TargetInfo {
  explicit FuzzTarget(int lanes) {
    name = "fuzz" + std::to_string(lanes);
    warp_size = lanes;
    max_shared_bytes = lanes == 32 ? 232448 : 65536;
    has_async_copy = lanes == 32;
    block_registers = 65536, thread_registers = 255;
  }
};
}  // namespace

const tl::codegen::TargetInfo& tl::codegen::get_target_info(const std::string& name) {
  static const FuzzTarget t32(32), t64(64);
  if (name == "fuzz32") return t32;
  if (name == "fuzz64") return t64;
  throw tl::Error("unknown target '" + name + "' (the fuzzer knows: fuzz32, fuzz64)");
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  std::unique_ptr<tl::ir::Module> module;
  try {
    module = tl::ir::parse(text, "<fuzz>");
    tl::ir::verify(*module);
  } catch (const tl::Error&) {
    return 0;  // rejected with a diagnostic: the expected outcome for most inputs
  }
  check_round_trip(tl::ir::print(*module), "before the passes");

  // Each pass alone, in tiledsl-opt's order, then the fixed-point pipeline
  // that tl::compile runs. The verifier runs after every pass.
  for (auto& fn : module->functions) {
    for (const std::string& name : tl::transforms::pass_names()) {
      try {
        tl::transforms::find_pass(name)(*fn);
      } catch (const tl::Error&) {
        // A pass may reject what it cannot handle (e.g. a fold that would
        // overflow), as long as it says so.
        return 0;
      }
      try {
        tl::ir::verify(*fn);
      } catch (const tl::Error& e) {
        fail("a pass broke the IR", "after pass '" + name + "' on @" + fn->name + ": " + e.what());
      }
    }
    try {
      tl::transforms::simplify(*fn);
    } catch (const tl::Error&) {
      return 0;  // e.g. no fixed point within simplify's round cap: an error, not a hang
    }
    try {
      tl::ir::verify(*fn);
    } catch (const tl::Error& e) {
      fail("simplify broke the IR", "on @" + fn->name + ": " + e.what());
    }
  }
  check_round_trip(tl::ir::print(*module), "after the passes");

  // The GPU passes (the compile's list, pipeline.h), on a copy of each Tile
  // IR function, for 4 warps of 32 lanes on a target with asynchronous
  // copies and 2 warps of 64 on one without.
  for (const auto& fn : module->functions) {
    if (fn->is_gpu()) continue;
    for (const char* target : {"fuzz32", "fuzz64"}) {
      auto gpu = tl::ir::clone(*fn);
      tl::codegen::GpuContext ctx = tl::codegen::gpu_context(*gpu, target);
      ctx.num_warps = ctx.target.warp_size == 32 ? 4 : 2;
      bool given_up = false;
      for (const tl::codegen::GpuPass& pass : tl::codegen::gpu_passes()) {
        try {
          pass.run(ctx);
        } catch (const tl::Error& e) {
          // What the passes cannot do yet, said so; but an internal error
          // is a broken invariant of theirs.
          if (std::string_view(e.what()).find("internal:") != std::string_view::npos)
            fail("a GPU pass hit an internal error", std::string(pass.name) + " on @" + fn->name + ": " + e.what());
          given_up = true;
          break;
        }
        try {
          tl::ir::verify(*gpu);
        } catch (const tl::Error& e) {
          fail("a GPU pass broke the IR", std::string(pass.name) + " on @" + fn->name + ": " + e.what() +
                                              "\n--- GPU IR:\n" + tl::ir::print(*gpu));
        }
      }
      if (given_up) continue;
      // Every loop's pipeline rebuilt from its schedule as the lowering
      // does: a schedule the pass writes is one its rules allow.
      std::function<void(const tl::ir::Region&)> rebuild = [&](const tl::ir::Region& r) {
        for (const auto& o : r.ops) {
          if (o->kind == tl::ir::OpKind::For) {
            try {
              tl::codegen::scheduled_pipeline(*o, *ctx.plan, *ctx.axis, {false});
            } catch (const tl::Error& e) {
              fail("a loop schedule does not rebuild", "on @" + fn->name + ": " + e.what() + "\n--- GPU IR:\n" +
                                                           tl::ir::print(*gpu));
            }
          }
          for (const auto& sub : o->regions) rebuild(*sub);
        }
      };
      rebuild(gpu->body);
      check_round_trip(tl::ir::print(*gpu), "after the GPU passes");
    }
  }
  return 0;
}
