// ptxas, the CUDA toolkit's PTX assembler, run as a program: what makes a
// cubin from a kernel's PTX when the driver's JIT does not. The AOT
// compiler uses it with --ptxas (tiledsl/aot.h); a CUDA device links with
// it instead of the driver's JIT when TILEDSL_PTXAS names one (a newer
// ptxas than the driver's, say, as Triton ships its own: the two allocate
// registers differently).
#pragma once

#include <optional>
#include <string>

#include "ir/export.h"

namespace tl::nvptx {

TILEDSL_SHARED_BEGIN

struct Ptxas {
  std::string path;     // the program
  std::string version;  // its release, as `ptxas --version` ends: "V13.0.88"
};

// The ptxas TILEDSL_PTXAS names: unset, empty or "0": none (the driver's
// JIT links); "1": `ptxas` on PATH, else /usr/local/cuda/bin/ptxas; any
// other value: the path of one. tl::Error when the variable names one that
// does not run, saying what was tried.
std::optional<Ptxas> ptxas_from_environment();

// The cubin ptxas makes of `ptx` for `arch` ("sm_90a"); `name` (the
// kernel's) is for messages. tl::Error with ptxas's own output when it
// fails.
std::string run_ptxas(const std::string& ptxas, const std::string& ptx, const std::string& arch,
                      const std::string& name);

TILEDSL_SHARED_END

}  // namespace tl::nvptx
