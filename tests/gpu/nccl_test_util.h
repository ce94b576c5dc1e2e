// Inputs for the NCCL tests: small integers stored as floats, so that sums
// over a few ranks are exact in float32 and float16 and results compare
// with ==.
#pragma once

#include <cstdint>
#include <vector>

namespace dt::test {

// count values in [-48, 48], different for each seed.
inline std::vector<float> small_integers(int seed, int64_t count) {
  std::vector<float> v(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) v[i] = static_cast<float>((i * 7 + seed * 13) % 97) - 48.0f;
  return v;
}

}  // namespace dt::test
