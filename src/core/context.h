// A context is one device (the CPU, or GPU n) together with the resources
// that work on it needs: its allocator and, for a GPU, its stream. Arrays hold
// their context through shared_ptr, so a context outlives every array on it.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "core/memory_counters.h"

namespace dt::core {

// Same values as dt_device_type in dt_c_api.h.
enum class DeviceType : int { kCpu = 1, kGpu = 2 };

class Context {
 public:
  virtual ~Context() = default;
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  DeviceType type() const { return type_; }
  int device_id() const { return device_id_; }
  bool is_cpu() const { return type_ == DeviceType::kCpu; }
  std::string to_string() const;  // "cpu(0)", "gpu(1)"

  // CPU threads for the kernels of nets created on this context afterwards;
  // 0 (the default) means OMP_NUM_THREADS if set, else the usable CPUs. A
  // plain int, not an atomic: it is a setting made before nets are created,
  // not something to change while other threads build them.
  int num_threads() const { return num_threads_; }
  // Error(kInvalidArgument) for a negative count.
  void set_num_threads(int num_threads);

  // Raw device memory of `bytes` bytes (nullptr for 0 bytes); throws
  // Error(kOutOfMemory) when the device has none left.
  virtual void* allocate(size_t bytes) = 0;
  virtual void deallocate(void* ptr, size_t bytes) noexcept = 0;
  virtual void fill_zero(void* ptr, size_t bytes) = 0;
  // Waits until all work queued on this context has finished.
  virtual void synchronize() = 0;

  // What this context's allocator holds now and has held at most. Each
  // context has its own allocator, so two contexts of one GPU count apart.
  virtual MemoryStats memory_stats() const = 0;
  // Starts a new peak from what is in use now.
  virtual void reset_peak_memory() noexcept = 0;

 protected:
  Context(DeviceType type, int device_id) : type_(type), device_id_(device_id) {}

 private:
  DeviceType type_;
  int device_id_;
  int num_threads_ = 0;
};

// Whether a and b are the same device, so that an array on one needs no copy
// to be used on the other. Two contexts of one GPU are the same device but
// not the same object: each has its own stream.
inline bool same_device(const Context& a, const Context& b) {
  return a.type() == b.type() && a.device_id() == b.device_id();
}

// Alignment of every CPU allocation: one cache line, and what AVX-512 loads want.
constexpr size_t kCpuAlignment = 64;

// The CPU context (device id 0). Throws Error(kInvalidArgument) for another id.
std::shared_ptr<Context> make_cpu_context(int device_id = 0);

// CPU or GPU n. Throws Error(kNotSupported) for a GPU in a build without CUDA,
// Error(kNoDevice) for a GPU that is not there, Error(kInvalidArgument) for a
// negative id or an unknown device type value.
std::shared_ptr<Context> make_context(int device_type, int device_id);

// GPUs visible to this process; 0 without CUDA or without a usable driver.
int gpu_count() noexcept;

}  // namespace dt::core
