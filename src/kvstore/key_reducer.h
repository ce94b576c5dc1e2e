// The reduce every kvstore does on one machine: the values one call lists
// under a key summed onto the store's merge context (the CPU, or the merge
// GPU), and one copy there spread over the outputs listed under the key.
// The in-process stores ("local", "device", "nccl") keep their values with
// it; the parameter-server workers merge with it before a push and spread
// with it after a pull. With a GPU merge context and NCCL in the build, a
// key spread over two or more GPUs goes through one NCCL reduce or broadcast
// (GpuGroupReducer) instead of a chain of peer copies.
//
// On the CPU, an array from the bigarray bound on is summed on the store's
// ReductionPool (MXNET_KVSTORE_REDUCTION_NTHREADS threads, the same bits as
// one thread's sum).
//
// Not thread-safe: its owner serialises calls (a GpuGroupReducer drives the
// merge GPU's stream and shared communicators).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/context.h"
#include "core/ndarray.h"
#include "kvstore/gpu_group_reducer.h"
#include "ops/cpu/reduction_pool.h"

namespace dt::kvstore {

class KeyReducer {
 public:
  // cpu_sums: the owner's summing threads for a CPU merge context, which
  // must outlive this reducer; null: every CPU sum on the calling thread.
  explicit KeyReducer(std::shared_ptr<core::Context> merge, ops::cpu::ReductionPool* cpu_sums = nullptr);

  const std::shared_ptr<core::Context>& merge_context() const { return merge_; }

  // dst (on the merge context) = the sum of values[p] for p in positions,
  // added in the order listed, so results do not depend on timing. scratch:
  // a buffer the caller keeps for values from another device (allocated on
  // first need). Returns once no kernel reads the values any more: the
  // caller may overwrite them.
  void sum(const std::vector<core::NDArray>& values, const std::vector<size_t>& positions, const core::NDArray& dst,
           core::NDArray& scratch);
  // outs[p] = src (on the merge context) for p in positions.
  void broadcast(const core::NDArray& src, const std::vector<core::NDArray>& outs,
                 const std::vector<size_t>& positions);

 private:
  // dst += value on the merge context.
  void add(const core::NDArray& dst, const core::NDArray& value);

  std::shared_ptr<core::Context> merge_;
  ops::cpu::ReductionPool* cpu_sums_;
  // A GPU merge context in a build with NCCL; null otherwise.
  std::unique_ptr<GpuGroupReducer> group_reducer_;
};

// gpu(device) for a kvstore of type store_type that needs a GPU. Without one:
// Error(kNoDevice), or kNotSupported in a build without CUDA, saying that
// store_type needs a GPU and to use `instead`.
std::shared_ptr<core::Context> gpu_for_kvstore(const std::string& store_type, int device, const std::string& instead);

}  // namespace dt::kvstore
