// Debian's static LLVM lists the Polly plugin among the extensions that LTO
// (pulled in by lld for the AMD code objects) registers, but ships no static
// Polly. An empty plugin lets the static link close; Polly is never used.
#include <llvm/Plugins/PassPlugin.h>

::llvm::PassPluginLibraryInfo getPollyPluginInfo() {
  return {LLVM_PLUGIN_API_VERSION, "polly-unavailable", "0", [](llvm::PassBuilder&) {}};
}
