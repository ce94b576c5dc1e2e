#include "core/cuda/cuda_check.h"

#include <cstring>
#include <string>

namespace dt::core::cuda {

// The build passes absolute paths in __FILE__; from "src/" on is enough to
// find the call and keeps build-machine paths out of user-visible messages.
std::string failed_call_site(const char* file, int line, const char* what) {
  const char* best = nullptr;
  for (const char* p = std::strstr(file, "src/"); p != nullptr; p = std::strstr(p + 1, "src/")) best = p;
  return std::string(best != nullptr ? best : file) + ":" + std::to_string(line) + ": " + what + " failed: ";
}

ErrorCode error_code_for(cudaError_t status) noexcept {
  switch (status) {
    case cudaErrorMemoryAllocation: return ErrorCode::kOutOfMemory;
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver: return ErrorCode::kNoDevice;
    default: return ErrorCode::kCuda;
  }
}

void throw_cuda_error(cudaError_t status, const char* file, int line, const char* what) {
  static_cast<void>(cudaGetLastError());  // see the header: clear the slot before reporting
  throw Error(error_code_for(status),
              failed_call_site(file, line, what) + cudaGetErrorName(status) + ": " + cudaGetErrorString(status));
}

}  // namespace dt::core::cuda
