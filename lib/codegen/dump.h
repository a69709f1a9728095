// TILEDSL_DUMP: the stages of a compile printed for a user, inline so that
// the compiler (its IR and assembly) and a device's runtime (what ptxas
// said when it linked) print them alike without one library calling the
// other.
//
// TILEDSL_DUMP=tile,gpu,llvm,asm prints those stages of every compile to
// stderr (notes: the GPU passes' decisions a user may ask about, such as
// which descriptor blocks became tensor copies and why not), or writes
// <kernel>.<target>.<stage> files into TILEDSL_DUMP_DIR;
// after-<pass> (after-convert-layouts, say) the IR after one GPU pass,
// after-all after each; ptxas (also under notes) the assembler's warnings
// of lost performance where a CUDA device links with it (cuda_ptxas.h);
// TILEDSL_DUMP_KERNEL=name[,name...] keeps the dumps of those kernels only.
// The text is made only when it is wanted.
#pragma once

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace tl::codegen {

// Whether `item` is in a comma list.
inline bool dump_listed(const char* list, const std::string& item) {
  return (std::string(",") + list + ",").find("," + item + ",") != std::string::npos;
}

// Says on stderr, once for each value TILEDSL_DUMP takes, which of its
// items mean nothing (a typo would otherwise look like nothing to print).
// Without `passes`, the stage items; with the GPU passes' names (the
// compiler's: a device's runtime does not know them), the after-<pass> ones.
inline void warn_unknown_dump_items(const char* list, const std::vector<std::string_view>* passes = nullptr) {
  static std::mutex mutex;
  static std::string checked[2];  // the last value each kind was checked for
  std::lock_guard lock(mutex);
  std::string& seen = checked[passes ? 1 : 0];
  if (seen == list) return;
  seen = list;
  std::string items = seen + ",";
  for (size_t at = 0, comma; (comma = items.find(',', at)) != std::string::npos; at = comma + 1) {
    std::string item = items.substr(at, comma - at);
    bool after = item.rfind("after-", 0) == 0;
    if (item.empty() || after != (passes != nullptr)) continue;
    if (!passes) {
      if (dump_listed("tile,gpu,llvm,asm,all,notes,ptxas", item)) continue;
      std::cerr << "tiledsl: TILEDSL_DUMP: unknown item '" << item
                << "' (expected tile, gpu, llvm, asm, all, notes, ptxas, after-<pass> or after-all)\n";
      continue;
    }
    if (item == "after-all" || std::find(passes->begin(), passes->end(), item.substr(6)) != passes->end()) continue;
    std::string names;
    for (std::string_view p : *passes) names += (names.empty() ? "" : ", ") + std::string(p);
    std::cerr << "tiledsl: TILEDSL_DUMP: unknown item '" << item << "' (after-<pass> takes one of " << names << ")\n";
  }
}

inline void dump(const std::string& kernel, const std::string& target, const std::string& stage,
                 const std::function<std::string()>& text_of) {
  const char* want = std::getenv("TILEDSL_DUMP");
  if (!want) return;
  warn_unknown_dump_items(want);
  bool pass = stage.rfind("after-", 0) == 0;
  if (!dump_listed(want, stage) && !dump_listed(want, pass ? "after-all" : "all") &&
      !(stage == "ptxas" && dump_listed(want, "notes")))
    return;
  if (const char* only = std::getenv("TILEDSL_DUMP_KERNEL"); only && *only && !dump_listed(only, kernel)) return;
  std::string text = text_of();
  if (const char* dir = std::getenv("TILEDSL_DUMP_DIR")) {
    // A folder that cannot be written costs the dump its file, not the
    // compile: the text goes to stderr, saying why.
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    auto path = std::filesystem::path(dir) / (kernel + "." + target + "." + stage);
    if (!ec) {
      std::ofstream f(path);
      if (f << text) return;
    }
    std::cerr << "tiledsl: TILEDSL_DUMP_DIR: cannot write " << path.string() << (ec ? " (" + ec.message() + ")" : "")
              << "; the dump follows here\n";
  }
  std::cerr << "// ----- " << kernel << " [" << target << "] " << stage << "\n" << text << "\n";
}

}  // namespace tl::codegen
