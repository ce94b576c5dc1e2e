// Which way a copy between two GPU contexts goes, decided apart from CUDA so
// that a machine without a GPU can check the rule, and the counts of the
// copies each way, which a GPU test reads to see the rule applied.
//
// MXNET_ENABLE_GPU_P2P, as MXNet's: 1 (the default) lets a copy between two
// GPUs go device to device (cudaMemcpyPeer, over NVLink or PCIe peer access
// where the GPUs have it, staged by the driver where not); 0 makes it go
// through pinned host memory in chunks, device to host then host to
// device, for machines whose peer path is broken or slow. A copy within
// one GPU (two contexts of one device included) is never a peer copy.
// NCCL's reduces choose their own path (NCCL_P2P_DISABLE is NCCL's knob).
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace dt::core {

enum class GpuCopyPath {
  kSameDevice,   // one device's memory: cudaMemcpy device to device
  kPeer,         // two devices: cudaMemcpyPeer
  kThroughHost,  // two devices, peer copies off: via pinned host memory
};

// The path of a copy from GPU src_device to GPU dst_device.
GpuCopyPath choose_gpu_copy_path(int src_device, int dst_device, bool peer_copies);
// "same device", "peer", "through host".
const char* gpu_copy_path_name(GpuCopyPath path);

// MXNET_ENABLE_GPU_P2P's text: null (unset), "" or "1": true; "0": false.
// Error(kInvalidArgument) naming the variable otherwise.
bool gpu_peer_copies_from(const char* text);
// The same, of this process's environment.
bool gpu_peer_copies_from_environment();

// Copies counted by path; any thread.
class GpuCopyCounts {
 public:
  void count(GpuCopyPath path) { counts_[index(path)].fetch_add(1, std::memory_order_relaxed); }
  uint64_t of(GpuCopyPath path) const { return counts_[index(path)].load(std::memory_order_relaxed); }

 private:
  static size_t index(GpuCopyPath path) { return static_cast<size_t>(path); }
  std::array<std::atomic<uint64_t>, 3> counts_{};
};

}  // namespace dt::core
