// SINGA's partial update (DistOpt.backward_and_partial_update): every
// worker applies its own gradients to its own weights (the trainer does
// that), then one chunk of the parameters is averaged across the workers,
// a different chunk each step, round robin: every parameter is averaged
// once every num_chunks() steps, and a step sends about chunk_elements
// weights instead of every gradient.
//  - Chunks are SINGA's partitions: the parameters are taken in the order
//    given (the trainer gives backward's order, the last layer's first, as
//    SINGA's autograd.backward yields them); one with more than
//    chunk_elements elements is a chunk of its own; smaller ones gather into
//    an open chunk that closes as soon as it holds more than chunk_elements
//    elements (a large parameter in between leaves it open); what is left
//    open at the end is the last chunk. So chunks need not be contiguous,
//    every parameter is in exactly one, and none is empty.
//  - The step with count s (0 for the first) averages chunk s % num_chunks().
//  - The average goes through the kvstore: a pushpull of the chunk's weights
//    under the parameters' own keys, which in partial mode carry weights
//    only (the trainer pushes no gradient there), then a division by the
//    number of workers on every worker. That needs a store whose push sums
//    across the workers and replaces the stored value, which its pull then
//    returns: the all-reduce stores ("allreduce", "dist_nccl"), and
//    dist_sync servers without an optimizer, which store the sum of a
//    round (MXNet's behaviour without an updater). dist_async servers apply
//    each push on its own, so no round's sum exists there.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/ndarray.h"
#include "kvstore/kvstore.h"

namespace dt::train {

class PartialUpdate {
 public:
  // sizes: the parameters' element counts in the order chunks take them;
  // chunk_elements > 0 (Error(kInvalidArgument) otherwise).
  PartialUpdate(const std::vector<size_t>& sizes, size_t chunk_elements);

  // 0 only without parameters.
  size_t num_chunks() const { return chunks_.size(); }
  // Positions in `sizes` of chunk c's parameters, in the order taken.
  const std::vector<size_t>& chunk(size_t c) const { return chunks_.at(c); }
  // The chunk the step with count `step` averages.
  size_t chunk_of_step(int64_t step) const;

  // Averages the chunk of `step` across the workers of kv: keys[i] and
  // weights[i] belong to position i of `sizes`. The weights are replaced by
  // the average, the same bits on every worker. Every worker calls it with
  // the same step, as the collectives below it require.
  void average(kvstore::KVStore& kv, const std::vector<kvstore::Key>& keys, const std::vector<core::NDArray>& weights,
               int64_t step) const;

 private:
  std::vector<std::vector<size_t>> chunks_;
};

}  // namespace dt::train
