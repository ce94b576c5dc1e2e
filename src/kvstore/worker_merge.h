// How a parameter-server worker turns the values one call lists under a key
// into the one host copy it sends to the servers, and the host copy a pull
// brings back into the outputs listed under the key: what tells
// "dist_sync"/"dist_async" from "dist_sync_device"/"dist_async_device"
// (MXNet's KVStoreDist over CommCPU or over CommDevice).
//  - On the host: several values are summed on the CPU, each device value
//    copied to the host first; a pulled copy goes to the first output and
//    from there to the others.
//  - On a merge device: several values are summed on the merge GPU (one NCCL
//    reduce when they live on two or more GPUs, adds there otherwise; see
//    KeyReducer) and one copy goes to the host; a pulled copy goes once to
//    the merge GPU and is broadcast from there to the outputs.
//  Either way one value (one output) is copied straight between its device
//  and the host, and the sum runs in the order the values are listed, so
//  both merges give the same results.
// Thread-safe: pushes merge on the caller's thread while pull replies are
// spread on the transport's threads.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "core/context.h"
#include "core/ndarray.h"
#include "kvstore/key_reducer.h"
#include "ops/cpu/reduction_pool.h"

namespace dt::kvstore {

class WorkerMerge {
 public:
  // One key's buffers, reused by its requests (one request at a time).
  struct Buffers {
    core::NDArray host;     // the caller allocates it: what is sent, where a pull lands
    core::NDArray merged;   // on the merge context, allocated on first need
    core::NDArray scratch;  // KeyReducer's, allocated on first need
  };

  // reduction: the threads of a sum on the CPU (the host merge, or a CPU
  // merge context), MXNET_KVSTORE_REDUCTION_NTHREADS.
  static std::unique_ptr<WorkerMerge> on_host(const ops::cpu::ReductionSettings& reduction = {});
  // merge: the merge GPU. Any context works (a CPU one runs the same steps
  // on the CPU, as tests without a GPU do).
  static std::unique_ptr<WorkerMerge> on_device(std::shared_ptr<core::Context> merge,
                                                const ops::cpu::ReductionSettings& reduction = {});

  // The CPU sum's threads; null with a GPU merge context (for tests).
  const ops::cpu::ReductionPool* reduction_pool() const { return cpu_sums_.get(); }

  // Whether this is the merge on a device (the "_device" kvstore types).
  bool merges_on_device() const { return on_device_; }

  // The host bytes to send for values[p], p in positions: buffers.host, or
  // a lone host value's own memory.
  const uint8_t* push_source(Buffers& buffers, const std::vector<core::NDArray>& values,
                             const std::vector<size_t>& positions);
  // Where the reply to a pull into outs (one key's outputs) is written: the
  // first output's memory when it is on the host, else buffers.host.
  static uint8_t* pull_target(Buffers& buffers, const std::vector<core::NDArray>& outs);
  // Once that reply arrived: fills every output from it.
  void spread(Buffers& buffers, const std::vector<core::NDArray>& outs);

 private:
  WorkerMerge(bool on_device, std::shared_ptr<core::Context> merge, const ops::cpu::ReductionSettings& reduction);
  const core::NDArray& merged(Buffers& buffers) const;

  const bool on_device_;
  std::mutex mutex_;  // the reducer drives the merge context's stream and shared communicators
  std::unique_ptr<ops::cpu::ReductionPool> cpu_sums_;  // before reducer_, which sums on it
  KeyReducer reducer_;
};

}  // namespace dt::kvstore
