// Checks on generated code shared by the codegen tests: specializations,
// pattern counts in assembly, and assembling PTX with ptxas when the CUDA
// toolkit is installed (skipped, saying so, when it is not).
#pragma once

#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <string>
#include <string_view>

#include "codegen/compile.h"
#include "tiledsl/tiledsl.h"

namespace codegen_checks {

using namespace tl;

// An environment variable set while it lives, then as it was.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_) ::setenv(name_, old_->c_str(), 1);
    else ::unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// The GPU pass lists a test of generated code runs its kernels under
// (TILEDSL_GPU_PASSES): the default, and without the passes that reshape an
// overlapped loop's last step (each can be switched off, so each form must
// stay right): without prescale-accumulator, and without both.
inline const char* const kPassLists[] = {"", "-prescale-accumulator", "-peel-last-iteration,-prescale-accumulator"};

// Whether a list of kPassLists leaves peel-last-iteration on.
inline bool peels(const char* passes) {
  return std::string_view(passes).find("-peel-last-iteration") == std::string_view::npos;
}

// Every pointer 256-byte aligned, every integer 4096 (divisible by 16).
inline codegen::Specialization aligned(const Kernel& k) {
  codegen::Specialization s;
  for (const auto& p : k.params()) s.args.push_back(p.is_ptr ? codegen::pointer_arg_facts(256) : codegen::int_arg_facts(4096));
  return s;
}

inline int count(const std::string& text, const std::string& pattern) {
  std::regex re(pattern);
  return int(std::distance(std::sregex_iterator(text.begin(), text.end(), re), std::sregex_iterator()));
}

// What ptxas said of a PTX module.
struct PtxasRun {
  bool ok = false;  // it assembled
  std::string log;  // its output (-v: registers, spills)
};

// Runs ptxas on PTX; nullopt when ptxas is absent.
inline std::optional<PtxasRun> run_ptxas(const std::string& ptx, const std::string& arch) {
  const char* tool = "/usr/local/cuda/bin/ptxas";
  if (!std::filesystem::exists(tool)) return std::nullopt;
  auto dir = std::filesystem::temp_directory_path() / ("tiledsl-ptxas-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "k.ptx") << ptx;
  std::string cmd = std::string(tool) + " -v -arch=" + arch + " " + (dir / "k.ptx").string() + " -o " +
                    (dir / "k.cubin").string() + " > " + (dir / "log").string() + " 2>&1";
  int rc = std::system(cmd.c_str());
  std::ifstream log(dir / "log");
  PtxasRun run{rc == 0, std::string((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>())};
  std::filesystem::remove_all(dir);
  return run;
}

// Assembles PTX with ptxas; returns its output, or nullopt when absent.
// Checks that ptxas has no note of lost performance (C75xx "Performance
// Loss": wgmma serialized, for one), which it prints among the -v lines,
// not as a warning.
inline std::optional<std::string> ptxas(const std::string& ptx, const std::string& arch) {
  auto run = run_ptxas(ptx, arch);
  if (!run) return std::nullopt;
  if (!run->ok) FAIL("ptxas rejected the PTX:\n" << run->log);
  INFO(run->log);
  CHECK(run->log.find("Performance Loss") == std::string::npos);
  return run->log;
}

inline void check_assembles(const std::string& ptx, const std::string& arch) {
  if (auto log = ptxas(ptx, arch)) {
    CHECK(log->find("0 bytes spill stores") != std::string::npos);
  } else {
    WARN("[SKIP] ptxas not found (/usr/local/cuda/bin/ptxas): PTX not assembled");
  }
  CHECK(count(ptx, R"(ld\.local|st\.local)") == 0);
}

// A kernel that stores to global memory compiles for sm_90a (and
// assembles there) and for gfx942, each with its global stores.
inline void check_stores_on_sm90a_and_gfx942(const Kernel& k) {
  INFO(k.name());
  std::string ptx = codegen::emit_stage(*k.impl(), aligned(k), "sm_90a", codegen::Stage::Asm);
  CHECK(count(ptx, R"(\bst\.global)") > 0);
  check_assembles(ptx, "sm_90a");
  std::string gcn = codegen::emit_stage(*k.impl(), aligned(k), "gfx942", codegen::Stage::Asm);
  CHECK(count(gcn, R"(global_store)") > 0);
}

}  // namespace codegen_checks
