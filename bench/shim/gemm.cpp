// The gemm example's kernel behind a C function, for timing it in the same
// process as torch.matmul (cuBLAS through cuBLASLt) and Triton's kernels
// (bench/compare_gemm.py loads this library with ctypes and calls it on
// torch's tensors and stream): all three are then timed by the same clock
// (triton.testing.do_bench), in turns, in one process. bench_gemm's
// gemm_paired times against cublasGemmEx in C++ instead; the two harnesses
// differ in how long each kernel runs at a time, and so in the clocks the
// board's power cap leaves it (docs/perf.md runs 92 and 98).
//
// tl_gemm launches C = A @ B over row-major bf16 A [M, K], B [K, N] and
// C [M, N] (contiguous) on `device` ("cuda", "interp", ...) in
// configuration `config` ("BMxBNxBK:warps:stages[...]" as the example's
// --config; empty: the example's default for the shape,
// kernels::default_gemm_config), on `stream` (a CUstream or hipStream_t;
// null: the device's default stream). The kernel is compiled on the first
// call of its configuration and kept. Writes the configuration it ran
// into `used` (`used_len` bytes). Returns 0, or -1 with the message in
// `error` (`error_len` bytes), never throwing through C.
#include <cstring>
#include <map>
#include <mutex>
#include <string>

#include "../../examples/kernels/gemm.h"

namespace {

void copy_out(const std::string& text, char* out, int len) {
  if (!out || len <= 0) return;
  std::strncpy(out, text.c_str(), size_t(len) - 1);
  out[len - 1] = '\0';
}

// One compiled kernel a device and configuration, kept for the process.
tl::Kernel kernel_for(const tl::Device& dev, const kernels::GemmConfig& cfg) {
  static std::mutex mutex;
  static std::map<std::string, tl::Kernel> kernels_by_config;
  std::lock_guard<std::mutex> lock(mutex);  // one compile a configuration, whoever calls first
  const std::string key = dev.name() + " " + cfg.str();
  auto it = kernels_by_config.find(key);
  if (it == kernels_by_config.end())
    it = kernels_by_config.emplace(key, kernels::compile_gemm<tl::bf16>(cfg, "gemm_bf16")).first;
  return it->second;
}

}  // namespace

extern "C" int tl_gemm(const char* device, const char* config, void* a, void* b, void* c, int M, int N, int K,
                       void* stream, char* used, int used_len, char* error, int error_len) {
  try {
    if (M < 1 || N < 1 || K < 1)
      throw tl::Error("tl_gemm: expected M, N, K >= 1, found " + std::to_string(M) + ", " + std::to_string(N) + ", " +
                      std::to_string(K));
    tl::Device dev = tl::Device::get(device);
    tl::Stream s = tl::Stream::wrap(dev, stream);
    kernels::GemmConfig cfg = config && *config ? kernels::parse_gemm_config(config)
                                                : kernels::default_gemm_config(dev.target(), N, K, 2);
    if (cfg.streamk)
      throw tl::Error("tl_gemm: configuration " + cfg.str() + " takes a workspace (launch_gemm), which this shim does not pass");
    copy_out(cfg.str(), used, used_len);
    auto a_buf = tl::Buffer::wrap<tl::bf16>(dev, a, size_t(M) * K);
    auto b_buf = tl::Buffer::wrap<tl::bf16>(dev, b, size_t(K) * N);
    auto c_buf = tl::Buffer::wrap<tl::bf16>(dev, c, size_t(M) * N);
    s(kernel_for(dev, cfg), kernels::gemm_grid(cfg, M, N, dev), a_buf, b_buf, c_buf, M, N, K, K, 1, N, 1, N, 1);
    return 0;
  } catch (const std::exception& e) {
    copy_out(e.what(), error, error_len);
    return -1;
  }
}
