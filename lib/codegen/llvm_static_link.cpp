// Debian's static LLVM names the Polly plugin among the libraries that the
// pass builder pulls in, but ships no static Polly. An empty plugin lets the
// static link close; Polly is never used.
#include <llvm/Plugins/PassPlugin.h>

extern "C" ::llvm::PassPluginLibraryInfo getPollyPluginInfo() {
  return {LLVM_PLUGIN_API_VERSION, "polly-unavailable", "0", [](llvm::PassBuilder&) {}};
}
