#include "core/cuda/cuda_info.h"

#include <cuda_runtime_api.h>

namespace dt::core::cuda {

int runtime_version() noexcept {
  int version = 0;
  if (cudaRuntimeGetVersion(&version) != cudaSuccess) {
    static_cast<void>(cudaGetLastError());
    return 0;
  }
  return version;
}

}  // namespace dt::core::cuda
