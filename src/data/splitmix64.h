// SplitMix64 (Steele, Lea, Flood 2014): a tiny generator with a fixed,
// published output sequence, which the sampler's shuffles and the loader's
// augmentations draw from so that a seed means the same thing on every
// platform and standard library. std::mt19937_64 would be portable too, but
// the distributions on top of it are not, and this one needs no state
// beyond a word.
#pragma once

#include <cstdint>

namespace dt::data {

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

}  // namespace dt::data
