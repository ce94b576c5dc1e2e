// The all-reduce of one bucket of an "allreduce" store
// (host_allreduce_kvstore.h): the bucket's keys, in the order given (the
// same on every worker), cut into runs of one dtype of at most bucket_bytes
// (a larger key travels alone, in place), each run fused into one buffer
// and summed by one step of the survivor group (survivor_group.h). Each run
// is tagged with its keys, so that workers whose runs differ fail naming
// them. With gradient compression, float32 runs are encoded, all-gathered
// and decoded instead (compressed_all_reduce.h); such a step is not run
// again after a loss (its error feedback is spent), but it may take a
// survivor's result.
//
// Threading: one thread at a time, the one that runs the group's steps.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "core/ndarray.h"
#include "kvstore/compressed_all_reduce.h"
#include "kvstore/host/survivor_group.h"
#include "kvstore/kvstore.h"
#include "ps/compression/compression_mode.h"
#include "ps/roles/cluster_member.h"

namespace dt::kvstore {

class FusedAllReduce {
 public:
  // A key and its stored value (on the CPU), summed in place.
  using Item = std::pair<Key, core::NDArray>;

  // group and member must outlive it.
  FusedAllReduce(SurvivorGroup& group, ps::ClusterMember& member, size_t bucket_bytes);

  // Sums items across the workers in place.
  void run(const std::vector<Item>& items);
  // Compresses float32 runs from here on (mode none: no more); residuals of
  // an earlier setting are dropped.
  void set_compression(const ps::compression::CompressionConfig& config);

 private:
  // One run (bytes in all): one step.
  void run_fused(const std::vector<Item>& run, size_t bytes);

  SurvivorGroup& group_;
  ps::ClusterMember& member_;
  const size_t bucket_bytes_;
  std::vector<uint8_t> fusion_;  // a run's keys back to back; reused
  // Its error feedback is keyed by the run's tag.
  std::optional<CompressedAllReduce> compressed_;
};

}  // namespace dt::kvstore
