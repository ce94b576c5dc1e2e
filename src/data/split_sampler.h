// The sampler of MXNet's distributed-training tutorial: a dataset of `length`
// samples is cut into `num_parts` equal parts, one per worker, and worker
// `part_index` reads only its own. part_len = length / num_parts; the
// remainder is dropped so that every worker runs the same number of steps
// (a synchronous kvstore would otherwise wait on the worker with fewer).
#pragma once

#include <cstdint>
#include <vector>

namespace dt::data {

class SplitSampler {
 public:
  // Error(kInvalidArgument) unless 1 <= num_parts <= length and
  // 0 <= part_index < num_parts.
  //
  // Every epoch a part holds the tutorial's shard: the indices
  // [part_index * part_len, (part_index + 1) * part_len), the same samples
  // every epoch (MXNet's SplitSampler, so a worker's data never changes and
  // the parts are disjoint whatever the seeds). Without shuffle they come in
  // order; with shuffle, in an order determined only by (seed, part_index,
  // epoch), new each epoch, as MXNet's random.shuffle of the shard. The
  // permutation is computed with integer arithmetic only, so it is the same
  // on every platform and standard library.
  SplitSampler(int64_t length, int64_t num_parts = 1, int64_t part_index = 0, bool shuffle = false,
               uint64_t seed = 0);

  int64_t length() const { return length_; }
  int64_t num_parts() const { return num_parts_; }
  int64_t part_index() const { return part_index_; }
  int64_t part_len() const { return part_len_; }
  bool shuffle() const { return shuffle_; }
  uint64_t seed() const { return seed_; }

  // This part's part_len() indices for `epoch` (>= 0; Error(kInvalidArgument)
  // otherwise), in the order they are to be visited.
  std::vector<int64_t> epoch_indices(int64_t epoch) const;

 private:
  int64_t length_;
  int64_t num_parts_;
  int64_t part_index_;
  int64_t part_len_;
  bool shuffle_;
  uint64_t seed_;
};

}  // namespace dt::data
