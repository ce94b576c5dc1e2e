// GpuGroupReducer over NCCL: ncclReduce to the merge GPU for a push,
// ncclBroadcast from it for a pull, over a communicator per set of devices
// (created on first use, as MXNet's KVStoreNCCL does, and kept).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "collective/nccl/communicator.h"
#include "kvstore/gpu_group_reducer.h"

namespace dt::kvstore {

class NcclGroupReducer final : public GpuGroupReducer {
 public:
  // merge: the GPU context of the store's values; the root of every
  // collective, so its stream orders them with the store's own work.
  explicit NcclGroupReducer(std::shared_ptr<core::Context> merge);

  bool sum(const std::vector<core::NDArray>& values, const std::vector<size_t>& positions,
           const core::NDArray& dst) override;
  bool broadcast(const core::NDArray& src, const std::vector<core::NDArray>& outs,
                 const std::vector<size_t>& positions) override;

 private:
  // Ranks in the order of devices, the merge device first (rank 0 = root).
  struct Group {
    std::vector<std::unique_ptr<collective::nccl::Communicator>> comms;
    std::vector<std::shared_ptr<core::Context>> contexts;  // one per rank: the stream it runs on
  };
  // The devices of arrays[p] with the merge device first, or empty when one
  // of them is not a GPU or they span fewer than two GPUs.
  std::vector<int> devices_of(const std::vector<core::NDArray>& arrays, const std::vector<size_t>& positions) const;
  Group& group_for(const std::vector<int>& devices);
  std::shared_ptr<core::Context> context_for(int device);
  void run(Group& group, const std::function<void(collective::nccl::Communicator&, cudaStream_t)>& enqueue);

  std::shared_ptr<core::Context> merge_;
  std::map<int, std::shared_ptr<core::Context>> contexts_;
  std::map<std::vector<int>, Group> groups_;
};

}  // namespace dt::kvstore
