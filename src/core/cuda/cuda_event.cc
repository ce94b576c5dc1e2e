#include "core/cuda/cuda_event.h"

#include "core/cuda/cuda_check.h"
#include "core/cuda/device_guard.h"

namespace dt::core::cuda {

CudaEvent::CudaEvent(int device_id) : device_id_(device_id) {
  DeviceGuard guard(device_id);
  DT_CUDA_CHECK(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming));
}

CudaEvent::~CudaEvent() {
  if (cudaEventDestroy(event_) != cudaSuccess) static_cast<void>(cudaGetLastError());
}

void CudaEvent::record(cudaStream_t stream) {
  DeviceGuard guard(device_id_);
  DT_CUDA_CHECK(cudaEventRecord(event_, stream));
}

void CudaEvent::make_wait(cudaStream_t stream) const {
  DeviceGuard guard(device_id_);
  DT_CUDA_CHECK(cudaStreamWaitEvent(stream, event_, 0));
}

void CudaEvent::synchronize() const { DT_CUDA_CHECK(cudaEventSynchronize(event_)); }

}  // namespace dt::core::cuda
