// DT_CUDA_CHECK: turns a failed CUDA runtime call into dt::core::Error carrying
// the call site, so that a failure deep in a kernel launcher reaches the C API
// as a status plus a message that says which call failed and why.
#pragma once

#include <string>

#include <cuda_runtime_api.h>

#include "core/error.h"

namespace dt::core::cuda {

// kOutOfMemory for allocation failures, kNoDevice when there is no usable
// device or driver, kCuda for everything else.
ErrorCode error_code_for(cudaError_t status) noexcept;

// "<file from src/ on>:<line>: <what> failed: ", the start of every CUDA,
// cuBLAS and cuDNN error message.
std::string failed_call_site(const char* file, int line, const char* what);

// Throws Error(error_code_for(status), "<file>:<line>: <what> failed: <name>: <text>").
// Also clears the runtime's last-error slot: a non-sticky error (an allocation
// that failed, say) would otherwise be reported again by the next launch check.
[[noreturn]] void throw_cuda_error(cudaError_t status, const char* file, int line, const char* what);

}  // namespace dt::core::cuda

#define DT_CUDA_CHECK(expr)                                                      \
  do {                                                                           \
    const cudaError_t dt_cuda_check_status_ = (expr);                            \
    if (dt_cuda_check_status_ != cudaSuccess) {                                  \
      ::dt::core::cuda::throw_cuda_error(dt_cuda_check_status_, __FILE__, __LINE__, #expr); \
    }                                                                            \
  } while (0)
