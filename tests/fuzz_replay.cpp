// Runs a libFuzzer target's LLVMFuzzerTestOneInput (fuzz/*.cpp) on files,
// without libFuzzer or clang: the fuzz-regression.* tests build each target
// with this main in the ordinary build and replay the saved reproducers
// (tests/fuzz-regressions/<target>/) and the seed corpus through it, so a
// crash the fuzzer once found stays fixed on every `make test`.
//
//   replay_<target> <file or directory>...
//
// A directory stands for the files in it (not recursive). Missing paths are
// skipped (a target need not have every kind of seed), but running no input
// at all is a failure, so the test cannot pass by finding nothing.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace fs = std::filesystem;

int main(int argc, char** argv) {
  std::vector<fs::path> inputs;
  for (int i = 1; i < argc; ++i) {
    fs::path p = argv[i];
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      std::vector<fs::path> files;
      for (const auto& e : fs::directory_iterator(p))
        if (e.is_regular_file()) files.push_back(e.path());
      std::sort(files.begin(), files.end());
      inputs.insert(inputs.end(), files.begin(), files.end());
    } else if (fs::is_regular_file(p, ec)) {
      inputs.push_back(p);
    }
  }
  if (inputs.empty()) {
    std::fprintf(stderr, "fuzz_replay: expected input files, found none in the %d path(s) given\n", argc - 1);
    return 1;
  }
  for (const auto& p : inputs) {
    std::ifstream in(p, std::ios::binary);
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    // Printed before the run, so a crash's output names the input.
    std::printf("replay %s (%zu bytes)", p.c_str(), bytes.size());
    std::fflush(stdout);
    auto start = std::chrono::steady_clock::now();
    LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf(": ok, %.3f s\n", s);
  }
  std::printf("fuzz_replay: %zu inputs, no failure\n", inputs.size());
  return 0;
}
