#include "core/context.h"

#include <cstdlib>
#include <cstring>
#include <new>

#include "core/error.h"
#if DT_WITH_CUDA
#include "core/cuda/gpu_context.h"
#endif

namespace dt::core {

std::string Context::to_string() const {
  return std::string(type_ == DeviceType::kCpu ? "cpu(" : "gpu(") + std::to_string(device_id_) + ")";
}

void Context::set_num_threads(int num_threads) {
  if (num_threads < 0) {
    throw Error(ErrorCode::kInvalidArgument,
                "num_threads must be >= 0 (0: automatic), got " + std::to_string(num_threads));
  }
  num_threads_ = num_threads;
}

namespace {

class CpuContext final : public Context {
 public:
  CpuContext() : Context(DeviceType::kCpu, 0) {}

  void* allocate(size_t bytes) override {
    if (bytes == 0) return nullptr;
    const size_t rounded = rounded_size(bytes);
    if (rounded < bytes) throw Error(ErrorCode::kOutOfMemory, "allocation of " + std::to_string(bytes) + " bytes overflows");
    void* ptr = std::aligned_alloc(kCpuAlignment, rounded);
    if (ptr == nullptr) {
      throw Error(ErrorCode::kOutOfMemory, "cannot allocate " + std::to_string(bytes) + " bytes of host memory");
    }
    counters_.count_allocation(rounded);
    return ptr;
  }
  void deallocate(void* ptr, size_t bytes) noexcept override {
    if (ptr == nullptr) return;
    std::free(ptr);
    counters_.count_release(rounded_size(bytes));
  }
  void fill_zero(void* ptr, size_t bytes) override {
    if (bytes > 0) std::memset(ptr, 0, bytes);
  }
  void synchronize() override {}

  MemoryStats memory_stats() const override {
    MemoryStats stats;
    stats.in_use_bytes = counters_.in_use_bytes();
    stats.peak_bytes = counters_.peak_bytes();
    stats.allocations = counters_.allocations();
    return stats;  // cached_bytes stays 0: freed host memory goes straight back
  }
  void reset_peak_memory() noexcept override { counters_.reset_peak(); }

 private:
  // aligned_alloc wants a size that is a multiple of the alignment; the
  // counters count that size, which is what the heap reserves. Wraps to a
  // value below bytes when the rounding overflows.
  static size_t rounded_size(size_t bytes) noexcept {
    return (bytes + kCpuAlignment - 1) / kCpuAlignment * kCpuAlignment;
  }

  MemoryCounters counters_;
};

}  // namespace

std::shared_ptr<Context> make_cpu_context(int device_id) {
  if (device_id != 0) {
    throw Error(ErrorCode::kInvalidArgument, "the CPU context has device id 0, not " + std::to_string(device_id));
  }
  return std::make_shared<CpuContext>();
}

std::shared_ptr<Context> make_context(int device_type, int device_id) {
  if (device_type == static_cast<int>(DeviceType::kCpu)) return make_cpu_context(device_id);
  if (device_type != static_cast<int>(DeviceType::kGpu)) {
    throw Error(ErrorCode::kInvalidArgument, "unknown device type " + std::to_string(device_type));
  }
  if (device_id < 0) throw Error(ErrorCode::kInvalidArgument, "negative GPU id " + std::to_string(device_id));
#if DT_WITH_CUDA
  return cuda::make_gpu_context(device_id);
#else
  throw Error(ErrorCode::kNotSupported, "gpu(" + std::to_string(device_id) +
                                            ") requested, but this build of disttrain has no CUDA support");
#endif
}

int gpu_count() noexcept {
#if DT_WITH_CUDA
  return cuda::visible_device_count();
#else
  return 0;
#endif
}

}  // namespace dt::core
