#include "collective/nccl/nccl_check.h"

#include <cuda_runtime_api.h>

#include <string>

#include "core/cuda/cuda_check.h"
#include "core/error.h"

namespace dt::collective::nccl {

using core::Error;
using core::ErrorCode;

void throw_nccl_error(ncclResult_t status, const char* file, int line, const char* what) {
  std::string message = core::cuda::failed_call_site(file, line, what) + ncclGetErrorString(status);
  // The last error names the cause (which rank, which CUDA call) where the
  // result code only names the category.
  const char* detail = ncclGetLastError(nullptr);
  if (detail != nullptr && detail[0] != '\0') message += std::string(": ") + detail;
  ErrorCode code = ErrorCode::kNccl;
  if (status == ncclInvalidArgument) code = ErrorCode::kInvalidArgument;
  if (status == ncclUnhandledCudaError) {
    // NCCL reports a missing driver or device as a CUDA error; the runtime
    // knows which, and kNoDevice is what callers test for.
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) code = ErrorCode::kNoDevice;
    static_cast<void>(cudaGetLastError());
  }
  throw Error(code, message);
}

}  // namespace dt::collective::nccl
