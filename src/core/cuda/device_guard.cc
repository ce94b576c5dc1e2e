#include "core/cuda/device_guard.h"

#include <cuda_runtime_api.h>

#include "core/cuda/cuda_check.h"

namespace dt::core::cuda {

DeviceGuard::DeviceGuard(int device_id) {
  DT_CUDA_CHECK(cudaGetDevice(&previous_));
  if (previous_ != device_id) {
    DT_CUDA_CHECK(cudaSetDevice(device_id));
    switched_ = true;
  }
}

DeviceGuard::~DeviceGuard() {
  // Switching back to a device that was current a moment ago cannot fail in a
  // way the caller could act on, and a destructor must not throw; clear the
  // error so that the next check does not report it as its own.
  if (switched_ && cudaSetDevice(previous_) != cudaSuccess) static_cast<void>(cudaGetLastError());
}

}  // namespace dt::core::cuda
