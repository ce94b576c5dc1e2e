// RAII owners of the cuBLAS and cuDNN handles a GPU context hands to its
// kernels, and check macros that turn a failed library call into
// dt::core::Error(kCuda) with the call site, as DT_CUDA_CHECK does for the
// runtime.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#if DT_WITH_CUDNN
#include <cudnn.h>
#endif

namespace dt::core::cuda {

[[noreturn]] void throw_cublas_error(cublasStatus_t status, const char* file, int line, const char* what);

// A cuBLAS handle whose work is queued on `stream`. Pointer mode host (alpha
// and beta are host values) and CUBLAS_DEFAULT_MATH: float32 GEMMs stay in
// float32 rather than TF32, so that results match the CPU kernels.
class CublasHandle {
 public:
  CublasHandle(int device_id, cudaStream_t stream);
  ~CublasHandle();
  CublasHandle(const CublasHandle&) = delete;
  CublasHandle& operator=(const CublasHandle&) = delete;

  cublasHandle_t get() const { return handle_; }

 private:
  cublasHandle_t handle_ = nullptr;
};

#if DT_WITH_CUDNN
[[noreturn]] void throw_cudnn_error(cudnnStatus_t status, const char* file, int line, const char* what);

// A cuDNN handle whose work is queued on `stream`.
class CudnnHandle {
 public:
  CudnnHandle(int device_id, cudaStream_t stream);
  ~CudnnHandle();
  CudnnHandle(const CudnnHandle&) = delete;
  CudnnHandle& operator=(const CudnnHandle&) = delete;

  cudnnHandle_t get() const { return handle_; }

 private:
  cudnnHandle_t handle_ = nullptr;
};
#endif

}  // namespace dt::core::cuda

#define DT_CUBLAS_CHECK(expr)                                                      \
  do {                                                                             \
    const cublasStatus_t dt_cublas_check_status_ = (expr);                         \
    if (dt_cublas_check_status_ != CUBLAS_STATUS_SUCCESS) {                        \
      ::dt::core::cuda::throw_cublas_error(dt_cublas_check_status_, __FILE__, __LINE__, #expr); \
    }                                                                              \
  } while (0)

#define DT_CUDNN_CHECK(expr)                                                       \
  do {                                                                             \
    const cudnnStatus_t dt_cudnn_check_status_ = (expr);                           \
    if (dt_cudnn_check_status_ != CUDNN_STATUS_SUCCESS) {                          \
      ::dt::core::cuda::throw_cudnn_error(dt_cudnn_check_status_, __FILE__, __LINE__, #expr); \
    }                                                                              \
  } while (0)
