// cuBLAS loaded at run time with dlopen, for the GEMM benchmark's side by
// side figures: just enough of the API to run a row-major bf16/f16 GEMM
// with f32 accumulation (cublasGemmEx) on tiledsl's own buffers.
//
// Why not cublas_v2.h: tiledsl builds where no CUDA toolkit exists, and the
// benchmark must still run (and say that cuBLAS was skipped) where no
// libcublas is installed. The handful of types, enum values and prototypes
// are declared here as cublas_api.h and library_types.h (CUDA 13.0) spell
// them; enum values are ABI and do not change between releases.
//
// The library: $TILEDSL_CUBLAS when set (a path or a soname), else
// libcublas.so.13, libcublas.so.12, libcublas.so from the loader's path.
// pip's wheels (torch's) keep it under site-packages/nvidia/.../lib, outside
// that path; point TILEDSL_CUBLAS at it there.
#pragma once

#include <dlfcn.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

namespace bench {

class Cublas {
 public:
  // cublas_api.h and library_types.h.
  using Status = int;                          // cublasStatus_t
  using Handle = struct cublasContext*;        // cublasHandle_t
  static constexpr Status kSuccess = 0;        // CUBLAS_STATUS_SUCCESS
  static constexpr int kOpN = 0;               // CUBLAS_OP_N
  static constexpr int kR16F = 2;              // CUDA_R_16F
  static constexpr int kR16BF = 14;            // CUDA_R_16BF
  static constexpr int kCompute32F = 68;       // CUBLAS_COMPUTE_32F
  static constexpr int kGemmDefault = -1;      // CUBLAS_GEMM_DEFAULT

  // The process-wide instance: loads the library and creates a handle on
  // first use. Check ok() before calling gemm.
  static Cublas& get() {
    static Cublas instance;
    return instance;
  }

  bool ok() const { return handle_ != nullptr; }
  // Why !ok(): which libraries were tried and what failed.
  const std::string& error() const { return error_; }
  // What was loaded, e.g. "libcublas.so.12 (cuBLAS 120804)".
  const std::string& description() const { return description_; }

  // C = A @ B for row-major A [M, K], B [K, N], C [M, N] of `data_type`
  // (kR16BF or kR16F) at these device addresses, f32 accumulation, enqueued
  // on the legacy default stream. cuBLAS is column-major: a row-major
  // matrix is its transpose seen column-major, so it computes
  // C^T [N, M] = B^T [N, K] @ A^T [K, M] with no transposes and the operands
  // swapped. Returns the status; status_name() says what it means.
  Status gemm(int data_type, uint64_t a, uint64_t b, uint64_t c, int M, int N, int K) const {
    const float alpha = 1.0f, beta = 0.0f;  // f32 scalars: the compute type is 32F
    return gemm_ex_(handle_, kOpN, kOpN, N, M, K, &alpha, reinterpret_cast<const void*>(b), data_type, N,
                    reinterpret_cast<const void*>(a), data_type, K, &beta, reinterpret_cast<void*>(c), data_type, N,
                    kCompute32F, kGemmDefault);
  }

  std::string status_name(Status s) const {
    std::string name = status_string_ ? status_string_(s) : "cuBLAS status";
    return name + " (" + std::to_string(s) + ")";
  }

 private:
  using GemmEx = Status (*)(Handle, int transa, int transb, int m, int n, int k, const void* alpha, const void* A,
                            int a_type, int lda, const void* B, int b_type, int ldb, const void* beta, void* C,
                            int c_type, int ldc, int compute_type, int algo);
  using Create = Status (*)(Handle*);
  using GetVersion = Status (*)(Handle, int*);
  using StatusString = const char* (*)(Status);

  Cublas() {
    std::vector<std::string> candidates;
    if (const char* env = std::getenv("TILEDSL_CUBLAS"); env && *env) candidates.push_back(env);
    for (const char* name : {"libcublas.so.13", "libcublas.so.12", "libcublas.so"}) candidates.push_back(name);
    void* lib = nullptr;
    std::string loaded, tried;
    for (const auto& name : candidates) {
      lib = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (lib) {
        loaded = name;
        break;
      }
      const char* why = dlerror();
      tried += "\n  " + name + ": " + (why ? why : "not found");
    }
    if (!lib) {
      error_ = "cuBLAS not loaded (set TILEDSL_CUBLAS=/path/to/libcublas.so.N); tried:" + tried;
      return;
    }
    // cublas_v2.h maps cublasCreate and cublasGetVersion to their _v2
    // symbols with macros, which dlsym does not see; cublasGemmEx has one
    // name.
    auto create = symbol<Create>(lib, {"cublasCreate_v2", "cublasCreate"});
    gemm_ex_ = symbol<GemmEx>(lib, {"cublasGemmEx"});
    status_string_ = symbol<StatusString>(lib, {"cublasGetStatusString"});
    auto get_version = symbol<GetVersion>(lib, {"cublasGetVersion_v2", "cublasGetVersion"});
    if (!create || !gemm_ex_) {
      error_ = loaded + " lacks cublasCreate_v2 or cublasGemmEx";
      return;
    }
    Handle h = nullptr;
    if (Status s = create(&h); s != kSuccess) {
      error_ = "cublasCreate failed: " + status_name(s);
      return;
    }
    int version = 0;
    if (get_version) get_version(h, &version);
    description_ = loaded + (version ? " (cuBLAS " + std::to_string(version) + ")" : "");
    handle_ = h;  // kept until process exit, like the tiledsl device
  }

  template <class F>
  static F symbol(void* lib, std::initializer_list<const char*> names) {
    for (const char* n : names)
      if (void* p = dlsym(lib, n)) return reinterpret_cast<F>(p);
    return nullptr;
  }

  Handle handle_ = nullptr;
  GemmEx gemm_ex_ = nullptr;
  StatusString status_string_ = nullptr;
  std::string error_, description_;
};

}  // namespace bench
