#include "data/split_sampler.h"

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <string>
#include <utility>

#include "core/error.h"
#include "data/splitmix64.h"

namespace dt::data {

namespace {

using core::ErrorCode;

// The generator's starting state for (seed, epoch): each half goes through a
// full SplitMix64 step so that neighbouring seeds or epochs start far apart.
uint64_t epoch_state(uint64_t seed, int64_t epoch) {
  SplitMix64 from_seed(seed);
  SplitMix64 from_epoch(static_cast<uint64_t>(epoch));
  return from_seed.next() ^ (from_epoch.next() * 0xD1B54A32D192ED03ull);
}

}  // namespace

SplitSampler::SplitSampler(int64_t length, int64_t num_parts, int64_t part_index, bool shuffle, uint64_t seed)
    : length_(length), num_parts_(num_parts), part_index_(part_index), part_len_(0), shuffle_(shuffle), seed_(seed) {
  core::require(num_parts >= 1, ErrorCode::kInvalidArgument,
                "num_parts must be at least 1, not " + std::to_string(num_parts));
  core::require(num_parts <= length, ErrorCode::kInvalidArgument,
                "cannot split " + std::to_string(length) + " samples into " + std::to_string(num_parts) +
                    " non-empty parts");
  core::require(part_index >= 0 && part_index < num_parts, ErrorCode::kInvalidArgument,
                "part_index " + std::to_string(part_index) + " is outside [0, " + std::to_string(num_parts) + ")");
  part_len_ = length / num_parts;
}

std::vector<int64_t> SplitSampler::epoch_indices(int64_t epoch) const {
  core::require(epoch >= 0, ErrorCode::kInvalidArgument, "epoch must be >= 0, not " + std::to_string(epoch));
  const int64_t start = part_index_ * part_len_;
  std::vector<int64_t> part(static_cast<size_t>(part_len_));
  if (!shuffle_) {
    std::iota(part.begin(), part.end(), start);
    return part;
  }
  std::iota(part.begin(), part.end(), start);
  // Fisher-Yates from the back: position i takes a uniform pick of [0, i].
  // The part's index joins the seed, so workers do not visit their shards
  // in the same pattern.
  SplitMix64 rng(epoch_state(seed_ + static_cast<uint64_t>(part_index_), epoch));
  for (size_t i = part.size() - 1; i > 0; --i) {
    std::swap(part[i], part[static_cast<size_t>(rng.below(i + 1))]);
  }
  return part;
}

}  // namespace dt::data
