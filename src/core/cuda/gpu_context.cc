#include "core/cuda/gpu_context.h"

#include <string>

#include "core/cuda/cuda_check.h"
#include "core/cuda/device_guard.h"
#include "core/cuda/library_handles.h"
#include "core/error.h"

namespace dt::core::cuda {

GpuContext::GpuContext(int device_id)
    : Context(DeviceType::kGpu, device_id), peer_copies_(gpu_peer_copies_from_environment()), allocator_(device_id) {
  // Creating the stream is the last step that can fail, so the destructor
  // never sees a half-built context.
  DeviceGuard guard(device_id);
  DT_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
}

GpuContext::~GpuContext() {
  // Queued kernels may still use memory that allocator_ is about to free.
  try {
    DeviceGuard guard(device_id());
    static_cast<void>(cudaStreamSynchronize(stream_));
    attachments_.clear();
    // The handles are bound to the stream: they go before it does.
    cublas_.reset();
#if DT_WITH_CUDNN
    cudnn_.reset();
#endif
    static_cast<void>(cudaStreamDestroy(stream_));
    static_cast<void>(cudaGetLastError());
  } catch (const Error&) {
    // The device is gone (driver unloaded at exit); so is the stream.
  }
}

void* GpuContext::allocate(size_t bytes) { return allocator_.allocate(bytes); }

void GpuContext::deallocate(void* ptr, size_t) noexcept { allocator_.deallocate(ptr); }

void GpuContext::fill_zero(void* ptr, size_t bytes) {
  if (bytes == 0) return;
  DeviceGuard guard(device_id());
  DT_CUDA_CHECK(cudaMemsetAsync(ptr, 0, bytes, stream_));
}

CublasHandle& GpuContext::cublas() {
  std::lock_guard<std::mutex> lock(handles_mutex_);
  if (!cublas_) cublas_ = std::make_unique<CublasHandle>(device_id(), stream_);
  return *cublas_;
}

#if DT_WITH_CUDNN
CudnnHandle& GpuContext::cudnn() {
  std::lock_guard<std::mutex> lock(handles_mutex_);
  if (!cudnn_) cudnn_ = std::make_unique<CudnnHandle>(device_id(), stream_);
  return *cudnn_;
}
#endif

void GpuContext::synchronize() {
  DeviceGuard guard(device_id());
  DT_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

int visible_device_count() noexcept {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    static_cast<void>(cudaGetLastError());
    return 0;
  }
  return count;
}

std::shared_ptr<Context> make_gpu_context(int device_id) {
  if (device_id < 0) throw Error(ErrorCode::kInvalidArgument, "negative GPU id " + std::to_string(device_id));
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    static_cast<void>(cudaGetLastError());
    // Counted as no device, as visible_device_count() does, so that gpu_count()
    // and this error agree; the runtime's reason (no driver, mostly) goes along.
    throw Error(ErrorCode::kNoDevice, "gpu(" + std::to_string(device_id) +
                                          ") requested, but 0 CUDA devices are visible (" +
                                          cudaGetErrorName(status) + ": " + cudaGetErrorString(status) + ")");
  }
  if (device_id >= count) {
    throw Error(ErrorCode::kNoDevice, "gpu(" + std::to_string(device_id) + ") requested, but " + std::to_string(count) +
                                          " CUDA device" + (count == 1 ? " is" : "s are") + " visible");
  }
  return std::make_shared<GpuContext>(device_id);
}

cudaStream_t stream_of(const Context& ctx) {
  if (ctx.type() != DeviceType::kGpu) {
    throw Error(ErrorCode::kInternal, "a CUDA stream was asked of " + ctx.to_string());
  }
  return static_cast<const GpuContext&>(ctx).stream();
}

GpuContext& gpu_context_of(Context& ctx) {
  if (ctx.type() != DeviceType::kGpu) {
    throw Error(ErrorCode::kInternal, "a GPU kernel was asked to run on " + ctx.to_string());
  }
  return static_cast<GpuContext&>(ctx);
}

}  // namespace dt::core::cuda
