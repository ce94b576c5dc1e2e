// A compressed push's bytes as a server decodes them (GradientCodec::
// decode_add, every mode). Input: mode byte, parameter byte (threshold or
// fraction in bits 0-1; bit 2: 2bit's magnitude=threshold), element count
// (the low 13 bits of a little-endian uint16), then the encoded bytes. The
// codec promises that a rejected input leaves the destination untouched and
// that what it accepts is finite; both are checked.
#include <cmath>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "fuzz_support.h"
#include "ps/compression/gradient_codec.h"

namespace {

using dt::fuzz::require;
using dt::ps::compression::CompressionConfig;
using dt::ps::compression::CompressionMode;

constexpr double kThresholds[] = {0.5, 1e-3, 1.0, 1e30};
constexpr double kFractions[] = {0.01, 0.1, 0.5, 1.0};

CompressionConfig config_for(uint8_t mode_byte, uint8_t parameter) {
  const auto mode = static_cast<CompressionMode>(mode_byte % 7);
  CompressionConfig config;
  config.mode = mode;
  if (mode == CompressionMode::kTopK) {
    config.threshold_or_fraction = kFractions[parameter % 4];
  } else if (mode == CompressionMode::kThreshold || mode == CompressionMode::k2Bit ||
             mode == CompressionMode::k1Bit) {
    config.threshold_or_fraction = kThresholds[parameter % 4];
  }
  // Bit 2 of the parameter: 2bit's MXNet form (magnitude=threshold).
  if (mode == CompressionMode::k2Bit && (parameter & 4) != 0) {
    config.magnitude = dt::ps::compression::Magnitude::kThreshold;
  }
  return config;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 4) return 0;
  const dt::ps::compression::GradientCodec codec(config_for(data[0], data[1]));
  // At most 8191 elements: enough for every word and padding boundary,
  // small enough to keep thousands of runs a second.
  const size_t n = (size_t{data[2]} | size_t{data[3]} << 8) & 0x1FFF;
  const uint8_t* bytes = data + 4;
  const size_t byte_count = size - 4;
  // Copied so that the codec cannot rely on reading past the bytes it was given.
  std::vector<uint8_t> encoded(bytes, bytes + byte_count);
  std::vector<float> dst(n, 0.0f);
  try {
    codec.decode_add(encoded.data(), encoded.size(), dst.data(), dst.size());
  } catch (const dt::core::Error&) {
    for (float v : dst) require(v == 0.0f, "a rejected push changed the destination");
    return 0;
  }
  for (float v : dst) require(std::isfinite(v), "an accepted push decoded to a non-finite value");
  return 0;
}
