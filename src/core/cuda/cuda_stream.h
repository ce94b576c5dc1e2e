// An owned CUDA stream on one device, non-blocking with respect to the
// legacy default stream (as a GPU context's own). The destructor waits for
// the work queued on it, so memory it reads or writes may be freed after.
#pragma once

#include <cuda_runtime_api.h>

namespace dt::core::cuda {

class CudaStream {
 public:
  // Error(kCuda) (or kNoDevice) when the stream cannot be created.
  explicit CudaStream(int device_id);
  ~CudaStream();
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;

  cudaStream_t get() const { return stream_; }
  int device_id() const { return device_id_; }
  // The host waits for everything queued so far.
  void synchronize() const;

 private:
  int device_id_;
  cudaStream_t stream_ = nullptr;
};

}  // namespace dt::core::cuda
