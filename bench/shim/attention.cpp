// The attention example's kernel behind a C function, for timing it in the
// same process as torch's SDPA back ends (bench/compare_attention.py loads
// this library with ctypes and calls it on torch's tensors and stream): the
// two are then timed by the same clock, in turns, in one process, which
// separate processes (bench_attention beside the script) do not give.
//
// tl_attention launches O = softmax(Q K^T * sm_scale) V over Q, O [B, H, N,
// D] and K, V [B, H / group, N, D] (contiguous, bf16) on `device` ("cuda",
// "interp", ...), in the example's default configuration for that shape
// (kernels::attention_config: TILEDSL_ATTN_CONFIG when set), on `stream`
// (a CUstream or hipStream_t; null: the device's default stream; ignored
// by the interpreter). The kernel is compiled on the first call of its
// configuration and kept. Returns 0, or -1 with the message in `error`
// (`error_len` bytes, NUL-terminated), never throwing through C.
#include <cmath>
#include <cstring>
#include <map>
#include <mutex>
#include <string>

#include "../../examples/kernels/attention.h"

namespace {

template <int D, bool CAUSAL>
void launch(const tl::Stream& stream, const kernels::AttentionConfig& cfg, void* q, void* k, void* v, void* o, int B,
            int H, int N, int group) {
  // One compiled kernel a configuration, kept for the process.
  static std::mutex mutex;
  static std::map<std::string, std::shared_ptr<void>> kernels_by_config;
  tl::Device dev = stream.device();
  const size_t n = size_t(B) * H * N * D, n_kv = n / size_t(group);
  auto q_buf = tl::Buffer::wrap<tl::bf16>(dev, q, n), o_buf = tl::Buffer::wrap<tl::bf16>(dev, o, n);
  auto k_buf = tl::Buffer::wrap<tl::bf16>(dev, k, n_kv), v_buf = tl::Buffer::wrap<tl::bf16>(dev, v, n_kv);
  const float sm_scale = 1.0f / std::sqrt(float(D));
  kernels::with_tiles(cfg, [&]<int BM, int BN>() {
    using Kernel = kernels::AttentionKernel<tl::bf16, BM, BN, D, CAUSAL>;
    std::shared_ptr<void> kernel;
    {
      std::lock_guard<std::mutex> lock(mutex);  // one compile a configuration, whoever calls first
      std::shared_ptr<void>& slot = kernels_by_config[dev.name() + " " + cfg.str()];
      if (!slot)
        slot = std::make_shared<Kernel>(
            cfg, tl::CompileOptions{.name = "attention_bf16_d" + std::to_string(D) + (CAUSAL ? "_causal" : "")});
      kernel = slot;
    }
    (*static_cast<Kernel*>(kernel.get()))(stream, q_buf, k_buf, v_buf, o_buf, B, H, N, sm_scale, group);
  });
}

}  // namespace

extern "C" int tl_attention(const char* device, void* q, void* k, void* v, void* o, int B, int H, int N, int D,
                            int causal, int group, void* stream, char* error, int error_len) {
  try {
    if (D != 64 && D != 128) throw tl::Error("tl_attention: expected head dim 64 or 128, found " + std::to_string(D));
    if (B < 1 || H < 1 || N < 1 || group < 1 || H % group)
      throw tl::Error("tl_attention: expected B, H, N >= 1 and H a multiple of group, found B=" + std::to_string(B) +
                      " H=" + std::to_string(H) + " N=" + std::to_string(N) + " group=" + std::to_string(group));
    tl::Device dev = tl::Device::get(device);
    tl::Stream s = tl::Stream::wrap(dev, stream);
    auto cfg = kernels::attention_config(D, dev.target(), N, causal != 0);
    if (D == 64) causal ? launch<64, true>(s, cfg, q, k, v, o, B, H, N, group) : launch<64, false>(s, cfg, q, k, v, o, B, H, N, group);
    else causal ? launch<128, true>(s, cfg, q, k, v, o, B, H, N, group) : launch<128, false>(s, cfg, q, k, v, o, B, H, N, group);
    return 0;
  } catch (const std::exception& e) {
    if (error && error_len > 0) {
      std::strncpy(error, e.what(), size_t(error_len) - 1);
      error[error_len - 1] = '\0';
    }
    return -1;
  }
}
