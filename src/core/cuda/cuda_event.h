// An owned CUDA event on one device, created without timing (the cheapest
// kind, for ordering work between streams). Move-free and copy-free: an
// owner keeps it in place for its whole life.
#pragma once

#include <cuda_runtime_api.h>

namespace dt::core::cuda {

class CudaEvent {
 public:
  // Error(kCuda) (or kNoDevice) when the event cannot be created.
  explicit CudaEvent(int device_id);
  ~CudaEvent();
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;

  // Marks the point of `stream` reached by the work queued so far.
  void record(cudaStream_t stream);
  // `stream` runs nothing queued after this call before the recorded point
  // is reached; the host does not wait. Before any record: no wait.
  void make_wait(cudaStream_t stream) const;
  // The host waits for the recorded point: bounded by the work queued on
  // the recorded stream before it. Before any record: returns at once.
  void synchronize() const;

 private:
  int device_id_;
  cudaEvent_t event_ = nullptr;
};

}  // namespace dt::core::cuda
