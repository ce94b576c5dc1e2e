// The GPU context: one device, one CUDA stream on which all of the context's
// work is queued in order, and a caching allocator for its memory.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>

#include "core/context.h"
#include "core/cuda/caching_allocator.h"

namespace dt::core::cuda {

class GpuContext final : public core::Context {
 public:
  // Use make_gpu_context, which checks the id first.
  explicit GpuContext(int device_id);
  ~GpuContext() override;  // waits for the stream, then destroys it

  void* allocate(size_t bytes) override;
  void deallocate(void* ptr, size_t bytes) noexcept override;
  void fill_zero(void* ptr, size_t bytes) override;
  void synchronize() override;

  // Non-blocking with respect to the legacy default stream, so that work on
  // other libraries' default stream does not serialise with ours.
  cudaStream_t stream() const { return stream_; }
  CachingAllocator& allocator() { return allocator_; }

 private:
  CachingAllocator allocator_;
  cudaStream_t stream_ = nullptr;
};

// A context on GPU device_id. Throws Error(kInvalidArgument) for a negative id,
// Error(kNoDevice) naming the id and the visible count when the device is not
// there (no driver counts as none visible), Error(kCuda) for other failures.
std::shared_ptr<Context> make_gpu_context(int device_id);

// cudaGetDeviceCount; 0 on any error (no driver, no device).
int visible_device_count() noexcept;

// The stream of a GPU context; Error(kInternal) for any other context, since
// asking is a bug in the caller.
cudaStream_t stream_of(const Context& ctx);

}  // namespace dt::core::cuda
