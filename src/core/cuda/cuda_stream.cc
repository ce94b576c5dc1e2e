#include "core/cuda/cuda_stream.h"

#include "core/cuda/cuda_check.h"
#include "core/cuda/device_guard.h"

namespace dt::core::cuda {

CudaStream::CudaStream(int device_id) : device_id_(device_id) {
  DeviceGuard guard(device_id);
  DT_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
}

CudaStream::~CudaStream() {
  // Errors here mean the device is gone (the driver unloaded at exit): the
  // stream went with it and nobody can act on them.
  if (cudaStreamSynchronize(stream_) != cudaSuccess) static_cast<void>(cudaGetLastError());
  if (cudaStreamDestroy(stream_) != cudaSuccess) static_cast<void>(cudaGetLastError());
}

void CudaStream::synchronize() const {
  DeviceGuard guard(device_id_);
  DT_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

}  // namespace dt::core::cuda
