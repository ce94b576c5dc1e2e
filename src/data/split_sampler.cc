#include "data/split_sampler.h"

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <string>
#include <utility>

#include "core/error.h"

namespace dt::data {

namespace {

using core::ErrorCode;

// SplitMix64 (Steele, Lea, Flood 2014): a tiny generator with a fixed,
// published output sequence. std::mt19937_64 would be portable too, but the
// distributions on top of it are not, and this one needs no state beyond a word.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t state) : state_(state) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, bound) for bound >= 1, by rejection: draws at or above
  // the largest multiple of bound are redrawn, so no value is favoured
  // (std::uniform_int_distribution does the same job, but its algorithm
  // differs between standard libraries).
  uint64_t below(uint64_t bound) {
    const uint64_t limit = UINT64_MAX - UINT64_MAX % bound;
    uint64_t draw;
    do {
      draw = next();
    } while (draw >= limit);
    return draw % bound;
  }

 private:
  uint64_t state_;
};

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
  std::vector<int64_t> all(static_cast<size_t>(length_));
  std::iota(all.begin(), all.end(), int64_t{0});
  // Fisher-Yates from the back: position i takes a uniform pick of [0, i].
  SplitMix64 rng(epoch_state(seed_, epoch));
  for (size_t i = all.size() - 1; i > 0; --i) {
    std::swap(all[i], all[static_cast<size_t>(rng.below(i + 1))]);
  }
  std::copy(all.begin() + start, all.begin() + start + part_len_, part.begin());
  return part;
}

}  // namespace dt::data
