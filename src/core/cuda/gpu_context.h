// The GPU context: one device, one CUDA stream on which all of the context's
// work is queued in order, a caching allocator for its memory, and the
// cuBLAS/cuDNN handles its kernels use, bound to that stream.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <mutex>
#include <typeindex>
#include <typeinfo>
#include <unordered_map>

#include "core/context.h"
#include "core/cuda/caching_allocator.h"
#include "core/cuda/host_staged_copy.h"
#include "core/cuda/shared_workspace.h"
#include "core/gpu_copy_path.h"

namespace dt::core::cuda {

class CublasHandle;
#if DT_WITH_CUDNN
class CudnnHandle;
#endif

class GpuContext final : public core::Context {
 public:
  // Use make_gpu_context, which checks the id first.
  explicit GpuContext(int device_id);
  ~GpuContext() override;  // waits for the stream, then destroys it

  void* allocate(size_t bytes) override;
  void deallocate(void* ptr, size_t bytes) noexcept override;
  void fill_zero(void* ptr, size_t bytes) override;
  void synchronize() override;
  MemoryStats memory_stats() const override { return allocator_.memory_stats(); }
  void reset_peak_memory() noexcept override { allocator_.reset_peak(); }

  // Non-blocking with respect to the legacy default stream, so that work on
  // other libraries' default stream does not serialise with ours.
  cudaStream_t stream() const { return stream_; }
  CachingAllocator& allocator() { return allocator_; }
  // The scratch block the context's kernels share for their library
  // workspaces (core/cuda/shared_workspace.h).
  SharedWorkspace& workspace() { return workspace_; }

  // Per-context state of the layers above core, which core cannot name (the
  // convolution algorithms chosen per shape, ops/conv_algorithm_cache.h):
  // one T per context, made by make() (returning std::unique_ptr<T>) on
  // first use and destroyed with the context, after its stream has drained.
  // T must not keep the context alive: a shared_ptr to it would be a cycle.
  // Thread-safe; make() runs under the lock, so it must not ask for an
  // attachment itself.
  template <typename T, typename Make>
  T& attachment(Make&& make) {
    std::lock_guard<std::mutex> lock(attachments_mutex_);
    std::shared_ptr<void>& slot = attachments_[std::type_index(typeid(T))];
    if (!slot) slot = std::shared_ptr<T>(make());
    return *static_cast<T*>(slot.get());
  }

  // Library handles, created on first use: a handle costs device memory and
  // (cuDNN) noticeable start-up time that a context which only stores arrays
  // should not pay. Each queues its work on stream(). A handle must not be
  // used by two threads at once, which holds as long as one thread runs a
  // context's kernels at a time.
  CublasHandle& cublas();
#if DT_WITH_CUDNN
  CudnnHandle& cudnn();
#endif

  // Copies from another GPU into this context (core/gpu_copy_path.h):
  // whether they may be peer copies (MXNET_ENABLE_GPU_P2P, read when the
  // context is made), the buffer of those that go through host memory, and
  // how many went each way (library-internal; GPU tests read them). Used by
  // core/cuda/cuda_copy.cc, whose copies take the contexts as const.
  bool peer_copies() const { return peer_copies_; }
  HostStagedCopy& host_staging() const { return host_staging_; }
  GpuCopyCounts& copies_in() const { return copies_in_; }

 private:
  const bool peer_copies_;
  // Scratch and statistics of copies, not the context's state.
  mutable HostStagedCopy host_staging_;
  mutable GpuCopyCounts copies_in_;
  CachingAllocator allocator_;
  // After allocator_, so destroyed before it: the block goes back first.
  SharedWorkspace workspace_{allocator_};
  cudaStream_t stream_ = nullptr;
  std::mutex handles_mutex_;
  std::unique_ptr<CublasHandle> cublas_;
#if DT_WITH_CUDNN
  std::unique_ptr<CudnnHandle> cudnn_;
#endif
  std::mutex attachments_mutex_;
  std::unordered_map<std::type_index, std::shared_ptr<void>> attachments_;
};

// A context on GPU device_id. Throws Error(kInvalidArgument) for a negative id
// or a malformed MXNET_ENABLE_GPU_P2P,
// Error(kNoDevice) naming the id and the visible count when the device is not
// there (no driver counts as none visible), Error(kCuda) for other failures.
std::shared_ptr<Context> make_gpu_context(int device_id);

// cudaGetDeviceCount; 0 on any error (no driver, no device).
int visible_device_count() noexcept;

// The stream of a GPU context; Error(kInternal) for any other context, since
// asking is a bug in the caller.
cudaStream_t stream_of(const Context& ctx);

// ctx as a GPU context; Error(kInternal) for any other context, as above.
GpuContext& gpu_context_of(Context& ctx);

}  // namespace dt::core::cuda
