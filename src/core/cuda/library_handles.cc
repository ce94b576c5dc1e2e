#include "core/cuda/library_handles.h"

#include <cstring>
#include <string>

#include "core/cuda/cuda_check.h"
#include "core/cuda/device_guard.h"
#include "core/error.h"

namespace dt::core::cuda {


void throw_cublas_error(cublasStatus_t status, const char* file, int line, const char* what) {
  const ErrorCode code = status == CUBLAS_STATUS_ALLOC_FAILED ? ErrorCode::kOutOfMemory : ErrorCode::kCuda;
  throw Error(code, failed_call_site(file, line, what) + cublasGetStatusName(status) + ": " +
                        cublasGetStatusString(status));
}

CublasHandle::CublasHandle(int device_id, cudaStream_t stream) {
  // A handle belongs to the device current when it is created.
  DeviceGuard guard(device_id);
  DT_CUBLAS_CHECK(cublasCreate(&handle_));
  try {
    DT_CUBLAS_CHECK(cublasSetStream(handle_, stream));
    DT_CUBLAS_CHECK(cublasSetPointerMode(handle_, CUBLAS_POINTER_MODE_HOST));
    DT_CUBLAS_CHECK(cublasSetMathMode(handle_, CUBLAS_DEFAULT_MATH));
  } catch (...) {
    static_cast<void>(cublasDestroy(handle_));
    throw;
  }
}

CublasHandle::~CublasHandle() { static_cast<void>(cublasDestroy(handle_)); }

#if DT_WITH_CUDNN
void throw_cudnn_error(cudnnStatus_t status, const char* file, int line, const char* what) {
  const bool out_of_memory = status == CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED ||
                             status == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED;
  const ErrorCode code = out_of_memory ? ErrorCode::kOutOfMemory : ErrorCode::kCuda;
  throw Error(code, failed_call_site(file, line, what) + cudnnGetErrorString(status));
}

CudnnHandle::CudnnHandle(int device_id, cudaStream_t stream) {
  DeviceGuard guard(device_id);
  DT_CUDNN_CHECK(cudnnCreate(&handle_));
  try {
    DT_CUDNN_CHECK(cudnnSetStream(handle_, stream));
  } catch (...) {
    static_cast<void>(cudnnDestroy(handle_));
    throw;
  }
}

CudnnHandle::~CudnnHandle() { static_cast<void>(cudnnDestroy(handle_)); }
#endif

}  // namespace dt::core::cuda
