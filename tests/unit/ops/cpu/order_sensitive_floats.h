// Floats whose sums round differently in another order of the additions,
// the same for a seed: what the tests of summing threads add up, so that a
// sum computed in another order could not pass for the rank-order one.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace dt::test_support {

// Magnitudes from 10^-4 to 10^max_exponent, both signs.
inline std::vector<float> order_sensitive_floats(size_t count, uint32_t seed, float max_exponent = 7.0f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> exponent(-4.0f, max_exponent);
  std::vector<float> values(count);
  for (float& v : values) v = ((gen() & 1) ? 1.0f : -1.0f) * std::pow(10.0f, exponent(gen));
  return values;
}

}  // namespace dt::test_support
