// ptxas, the CUDA toolkit's PTX assembler, run as a program: what makes a
// cubin from a kernel's PTX when the driver's JIT does not. The AOT
// compiler uses it with --ptxas (tiledsl/aot.h); a CUDA device links with
// it instead of the driver's JIT where the toolkit's is present, as Triton
// links with the ptxas it ships: the two allocate registers differently,
// and ptxas's allocation gave the kernels measured the same speed or more
// (docs/perf.md run 78). TILEDSL_PTXAS picks one or none.
#pragma once

#include <optional>
#include <string>

#include "ir/export.h"

namespace tl::nvptx {

TILEDSL_SHARED_BEGIN

struct Ptxas {
  std::string path;        // the program
  std::string version;     // its release, as `ptxas --version` ends: "V13.0.88"
  bool found = false;      // looked for, not named: where it fails on a kernel, the driver's JIT links it
};

// The ptxas that links kernels for a CUDA driver of `driver_version`
// (cuDriverGetVersion's number, 13000 for 13.0), by TILEDSL_PTXAS:
//   unset or empty: `ptxas` on PATH, else /usr/local/cuda/bin/ptxas, if
//                   one runs and its release is no newer than the driver
//                   (whose loader must take its cubins); else none;
//   "0":            none: the driver's JIT links;
//   "1":            the same search, without the release bound; tl::Error
//                   when none runs;
//   anything else:  the path of one; tl::Error when it does not run.
std::optional<Ptxas> ptxas_from_environment(int driver_version);

// The cubin ptxas makes of `ptx` for `arch` ("sm_90a"); `name` (the
// kernel's) is for messages. tl::Error with ptxas's own output when it
// fails. `notes`, when given, gets ptxas's warnings of lost performance a
// line each: warpgroup products serialized (C7512 and the like, "Potential
// Performance Loss") and registers spilled; empty when there are none.
std::string run_ptxas(const std::string& ptxas, const std::string& ptx, const std::string& arch,
                      const std::string& name, std::string* notes = nullptr);

TILEDSL_SHARED_END

}  // namespace tl::nvptx
