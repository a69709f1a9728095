// Kernels compiled ahead of time (tiledsl/precompiled.h): a Kernel made
// from the Tile IR text and binaries the generated code holds, and the
// choice of a binary for a launch, which GPU launchers make before they
// would compile (runtime/launcher.cpp).
#include "runtime/precompiled.h"

#include <algorithm>
#include <memory>

#include "ir/parser.h"
#include "ir/verifier.h"
#include "runtime/device.h"

namespace tl {

namespace {

std::vector<std::string> split_facts(std::string_view s) {
  std::vector<std::string> out;
  if (s.empty()) return out;
  size_t start = 0;
  for (;;) {
    size_t comma = s.find(',', start);
    out.emplace_back(s.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
    if (comma == std::string_view::npos) return out;
    start = comma + 1;
  }
}

bool is_fact(const std::string& f) { return f == "d1" || f == "d16" || f == "v1"; }

}  // namespace

Kernel load_precompiled(const PrecompiledKernel& k) {
  const std::string& name = k.options.name;
  auto fail = [&](const std::string& what) {
    throw Error("precompiled kernel '" + name + "': " + what +
                " (the generated file is damaged or was edited: generate it again)");
  };
  std::unique_ptr<ir::Module> module;
  try {
    module = ir::parse(k.tile_ir, "<precompiled " + name + ">");
  } catch (const Error& e) {
    fail(std::string("its Tile IR does not parse: ") + e.what());
  }
  if (module->functions.size() != 1 || module->functions[0]->name != name)
    fail("its Tile IR is not one function named '" + name + "'");
  ir::Function* fn = module->functions[0].get();
  try {
    ir::verify(*fn);
  } catch (const Error& e) {
    fail(std::string("its Tile IR does not verify: ") + e.what());
  }
  try {
    detail::check_compile_options(name, k.options, fn->loc.str());
  } catch (const Error& e) {
    fail(std::string("its options: ") + e.what());
  }

  auto impl = std::make_shared<detail::KernelImpl>();
  impl->name = name;
  impl->options = k.options;
  for (const auto& a : fn->body.args) impl->params.push_back(a->type);
  impl->fn = fn;
  impl->module = std::move(module);
  const std::vector<std::string> kinds = detail::device_kinds();
  for (const auto& b : k.binaries) {
    detail::PrecompiledEntry e{std::string(b.device), std::string(b.target), std::string(b.specialization), b.payload,
                               split_facts(b.specialization)};
    std::string where = "its binary for " + std::string(b.target) + " [" + std::string(b.specialization) + "]";
    if (b.device == "interp" || std::find(kinds.begin(), kinds.end(), b.device) == kinds.end())
      fail(where + " is for device '" + std::string(b.device) + "', which is not a GPU device kind of this build");
    if (e.facts.size() != impl->params.size())
      fail(where + " has " + std::to_string(e.facts.size()) + " argument entries for " +
           std::to_string(impl->params.size()) + " parameters");
    for (const auto& f : e.facts)
      if (!is_fact(f)) fail(where + " has the entry '" + f + "' (expected d1, d16 or v1)");
    if (b.payload.empty()) fail(where + " is empty");
    impl->precompiled.push_back(std::move(e));
  }
  return Kernel(std::move(impl));
}

std::vector<PrecompiledBinary> precompiled_binaries(const Kernel& k) {
  std::vector<PrecompiledBinary> out;
  if (!k.impl()) return out;
  for (const auto& e : k.impl()->precompiled) out.push_back({e.device, e.target, e.specialization, e.payload});
  return out;
}

namespace runtime {

const detail::PrecompiledEntry* pick_precompiled(const detail::KernelImpl& k, std::string_view device,
                                                 std::string_view target, const codegen::Specialization& spec) {
  const detail::PrecompiledEntry* best = nullptr;
  int best_score = -1;
  for (const auto& e : k.precompiled) {
    if (e.device != device || e.target != target || e.facts.size() != spec.args.size()) continue;
    int score = 0;
    bool fits = true;
    for (size_t i = 0; i < e.facts.size() && fits; ++i) {
      if (e.facts[i] == "d1") continue;
      const auto& a = spec.args[i];
      fits = e.facts[i] == "v1" ? a.value && *a.value == 1 : !a.value && a.divisibility % 16 == 0;
      ++score;
    }
    if (fits && score > best_score) best = &e, best_score = score;
  }
  return best;
}

std::string no_precompiled_binary(const detail::KernelImpl& k, std::string_view device, std::string_view target,
                                  const codegen::Specialization& spec) {
  std::string have;
  for (const auto& e : k.precompiled)
    have += "\n  " + e.device + " " + e.target + " [" + e.specialization + "]";
  return "kernel '" + k.name + "' on " + std::string(device) + " (" + std::string(target) +
         "): no precompiled binary fits this launch, whose arguments are [" + spec.key() +
         "], and this program has no compiler to make one (link tiledsl::tiledsl to compile at run time, or "
         "precompile the kernel for this target and specialization). A binary fits when its target is the "
         "device's and each argument meets its entry (d16: a pointer aligned to 16 bytes or an integer "
         "divisible by 16; v1: the integer 1; d1: anything). The kernel has:" +
         have;
}

}  // namespace runtime

}  // namespace tl
