// What the gradient-compression tests share: a config from its text, a
// gradient encoded into exactly the bytes the codec writes, those bytes
// decoded on their own, and reproducible random gradients.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "ps/compression/compression_mode.h"
#include "ps/compression/gradient_codec.h"

namespace dt::ps::compression::codec_test {

inline CompressionConfig config(const std::string& text) { return CompressionConfig::parse(text); }

inline std::vector<uint8_t> encode(const GradientCodec& codec, const std::vector<float>& g) {
  std::vector<uint8_t> out(codec.max_encoded_size(g.size()));
  out.resize(codec.encode(g.data(), g.size(), out.data(), out.size()));
  return out;
}

// Decodes into -0.0f, the one float x with x + y == y bit for bit for every
// y (+0 would turn a decoded -0 into +0), so the result is the decoded values.
inline std::vector<float> decode(const GradientCodec& codec, const std::vector<uint8_t>& bytes, size_t n) {
  std::vector<float> out(n, -0.0f);
  codec.decode_add(bytes.data(), bytes.size(), out.data(), n);
  return out;
}

// n values uniform in [-scale, scale), the same for the same seed.
inline std::vector<float> random_values(size_t n, uint32_t seed, float scale) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-scale, scale);
  std::vector<float> out(n);
  for (float& v : out) v = dist(rng);
  return out;
}

}  // namespace dt::ps::compression::codec_test
