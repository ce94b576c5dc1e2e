// What the gradient-compression codec tests share: bit views of floats,
// sparse-pair encodings, plain reference encoders for 2bit, 1bit and topk,
// and the list of every mode's config text.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "error_code_of.h"
#include "ps/compression/compression_mode.h"
#include "ps/compression/error_feedback.h"
#include "ps/compression/gradient_codec.h"
#include "unit/ps/codec_round_trip.h"

namespace dt::ps::compression::compression_test {

using core::ErrorCode;
using test_support::code_of;
using codec_test::config;
using codec_test::decode;
using codec_test::encode;
using codec_test::random_values;

inline constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
inline constexpr float kInf = std::numeric_limits<float>::infinity();

inline uint32_t bits_of(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

// Bit-for-bit equality, so that -0 and +0 differ.
inline void expect_same_floats(const std::vector<float>& expected, const std::vector<float>& actual) {
  ASSERT_EQ(expected.size(), actual.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(bits_of(expected[i]), bits_of(actual[i])) << "element " << i << ": " << expected[i] << " vs " << actual[i];
  }
}

inline std::vector<uint8_t> pairs(const std::vector<std::pair<uint32_t, float>>& entries) {
  std::vector<uint8_t> out(8 * entries.size());
  for (size_t p = 0; p < entries.size(); ++p) {
    std::memcpy(out.data() + 8 * p, &entries[p].first, 4);
    std::memcpy(out.data() + 8 * p + 4, &entries[p].second, 4);
  }
  return out;
}

// The formats as the header describes them, one value at a time, to check
// the vectorised encoders against.
inline std::vector<uint8_t> reference_2bit(const std::vector<float>& g, float t) {
  std::vector<uint8_t> out(4 * ((g.size() + 15) / 16), 0);
  for (size_t i = 0; i < g.size(); ++i) {
    const unsigned code = g[i] >= t ? 3u : g[i] <= -t ? 2u : 0u;
    out[i / 4] = static_cast<uint8_t>(out[i / 4] | (code << (6 - 2 * (i % 4))));
  }
  return out;
}

inline std::vector<uint8_t> reference_1bit(const std::vector<float>& g) {
  std::vector<uint8_t> out(4 * ((g.size() + 31) / 32), 0);
  for (size_t i = 0; i < g.size(); ++i) {
    if (g[i] > 0) out[i / 8] = static_cast<uint8_t>(out[i / 8] | (0x80u >> (i % 8)));
  }
  return out;
}

// The k largest |g|, ties to the lower index, in index order: by sorting
// (magnitude descending, index ascending), unlike the encoder's selection.
inline std::vector<uint8_t> reference_topk(const std::vector<float>& g, size_t k) {
  std::vector<uint32_t> order(g.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    return std::fabs(g[a]) != std::fabs(g[b]) ? std::fabs(g[a]) > std::fabs(g[b]) : a < b;
  });
  order.resize(k);
  std::sort(order.begin(), order.end());
  std::vector<std::pair<uint32_t, float>> chosen;
  for (uint32_t i : order) chosen.emplace_back(i, g[i]);
  return pairs(chosen);
}

// 2bit's default magnitude=mean decodes to means, which are not exact sums:
// the exact error-feedback test takes MXNet's form (magnitude=threshold),
// compression_magnitude_test.cc the mean form.
inline const char* const kLossyModes[] = {"fp16", "bf16", "2bit:threshold=0.5,magnitude=threshold", "1bit:threshold=0.25",
                                   "topk:fraction=0.25", "threshold:threshold=0.75"};
inline const char* const kAllModes[] = {"none",
                                 "fp16",
                                 "bf16",
                                 "2bit:threshold=0.5",
                                 "2bit:threshold=0.5,magnitude=threshold",
                                 "1bit:threshold=0.25",
                                 "topk:fraction=0.25",
                                 "threshold:threshold=0.75"};

}  // namespace dt::ps::compression::compression_test
