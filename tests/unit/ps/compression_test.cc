// The codec layer of gradient compression: config text, every wire format
// bit for bit, hostile bytes, and error feedback's bookkeeping.
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

namespace dt::ps::compression {
namespace {

using core::ErrorCode;
using test_support::code_of;
using codec_test::config;
using codec_test::decode;
using codec_test::encode;
using codec_test::random_values;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

uint32_t bits_of(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

// Bit-for-bit equality, so that -0 and +0 differ.
void expect_same_floats(const std::vector<float>& expected, const std::vector<float>& actual) {
  ASSERT_EQ(expected.size(), actual.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(bits_of(expected[i]), bits_of(actual[i])) << "element " << i << ": " << expected[i] << " vs " << actual[i];
  }
}

std::vector<uint8_t> pairs(const std::vector<std::pair<uint32_t, float>>& entries) {
  std::vector<uint8_t> out(8 * entries.size());
  for (size_t p = 0; p < entries.size(); ++p) {
    std::memcpy(out.data() + 8 * p, &entries[p].first, 4);
    std::memcpy(out.data() + 8 * p + 4, &entries[p].second, 4);
  }
  return out;
}

// The formats as the header describes them, one value at a time, to check
// the vectorised encoders against.
std::vector<uint8_t> reference_2bit(const std::vector<float>& g, float t) {
  std::vector<uint8_t> out(4 * ((g.size() + 15) / 16), 0);
  for (size_t i = 0; i < g.size(); ++i) {
    const unsigned code = g[i] >= t ? 3u : g[i] <= -t ? 2u : 0u;
    out[i / 4] = static_cast<uint8_t>(out[i / 4] | (code << (6 - 2 * (i % 4))));
  }
  return out;
}

std::vector<uint8_t> reference_1bit(const std::vector<float>& g) {
  std::vector<uint8_t> out(4 * ((g.size() + 31) / 32), 0);
  for (size_t i = 0; i < g.size(); ++i) {
    if (g[i] > 0) out[i / 8] = static_cast<uint8_t>(out[i / 8] | (0x80u >> (i % 8)));
  }
  return out;
}

// The k largest |g|, ties to the lower index, in index order: by sorting
// (magnitude descending, index ascending), unlike the encoder's selection.
std::vector<uint8_t> reference_topk(const std::vector<float>& g, size_t k) {
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
const char* const kLossyModes[] = {"fp16", "bf16", "2bit:threshold=0.5,magnitude=threshold", "1bit:threshold=0.25",
                                   "topk:fraction=0.25", "threshold:threshold=0.75"};
const char* const kAllModes[] = {"none",
                                 "fp16",
                                 "bf16",
                                 "2bit:threshold=0.5",
                                 "2bit:threshold=0.5,magnitude=threshold",
                                 "1bit:threshold=0.25",
                                 "topk:fraction=0.25",
                                 "threshold:threshold=0.75"};

// --- config -------------------------------------------------------------------

TEST(CompressionConfig, ParsesDefaultsAndPrintsCanonicalText) {
  EXPECT_EQ(config("none").to_string(), "none");
  EXPECT_EQ(config("fp16").to_string(), "fp16:error_feedback=on");
  EXPECT_EQ(config("bf16:error_feedback=off").to_string(), "bf16:error_feedback=off");
  EXPECT_EQ(config("2bit").to_string(), "2bit:threshold=0.5,error_feedback=on");
  EXPECT_EQ(config("1bit").to_string(), "1bit:threshold=0.5,error_feedback=on");
  EXPECT_EQ(config("2bit:error_feedback=off,threshold=2").to_string(), "2bit:threshold=2,error_feedback=off");
  EXPECT_EQ(config("topk:fraction=0.01").to_string(), "topk:fraction=0.01,error_feedback=on");
  EXPECT_EQ(config("threshold:threshold=1e-3").to_string(), "threshold:threshold=0.001,error_feedback=on");

  const CompressionConfig two_bit = config("2bit:threshold=0.75");
  EXPECT_EQ(two_bit.mode, CompressionMode::k2Bit);
  EXPECT_EQ(two_bit.threshold_or_fraction, 0.75);
  EXPECT_TRUE(two_bit.error_feedback);
  EXPECT_FALSE(config("none").error_feedback);
  EXPECT_EQ(CompressionConfig::defaults(CompressionMode::k2Bit), config("2bit"));
  EXPECT_EQ(CompressionConfig::defaults(CompressionMode::kNone), CompressionConfig{});
}

TEST(CompressionConfig, TextRoundTripsExactly) {
  for (const char* text : {"none", "fp16", "bf16:error_feedback=off", "2bit:threshold=0.30000000000000004",
                           "1bit:threshold=3.4028234663852886e+38", "topk:fraction=1", "topk:fraction=0.1",
                           "threshold:threshold=1.401298464324817e-45"}) {
    const CompressionConfig parsed = config(text);
    EXPECT_EQ(CompressionConfig::parse(parsed.to_string()), parsed) << text;
    EXPECT_EQ(CompressionConfig::parse(parsed.to_string()).to_string(), parsed.to_string()) << text;
  }
  EXPECT_EQ(config("2bit:threshold=0.30000000000000004").threshold_or_fraction, 0.30000000000000004);
}

TEST(CompressionConfig, ParseErrorsNameTheField) {
  struct Case {
    const char* text;
    std::vector<const char*> named;
  };
  const Case cases[] = {
      {"3bit", {"mode", "'3bit'"}},
      {"2BIT", {"mode", "'2BIT'"}},
      {"", {"mode", "''"}},
      {" 2bit", {"mode"}},
      {"2bit:threshold=abc", {"threshold", "'abc'"}},
      {"2bit:threshold=", {"threshold", "''"}},
      {"2bit:threshold=0.5x", {"threshold", "'0.5x'"}},
      {"2bit:threshold=-1", {"threshold", "-1"}},
      {"2bit:threshold=0", {"threshold", "0"}},
      {"2bit:threshold=inf", {"threshold", "'inf'"}},
      {"2bit:threshold=nan", {"threshold", "'nan'"}},
      {"1bit:threshold=1e40", {"threshold", "float"}},
      {"threshold:threshold=1e-50", {"threshold", "float"}},
      {"threshold", {"threshold=<value>"}},
      {"topk", {"fraction=<value>"}},
      {"topk:fraction=0", {"fraction", "(0, 1]"}},
      {"topk:fraction=1.5", {"fraction", "1.5"}},
      {"topk:threshold=0.5", {"topk", "threshold"}},
      {"2bit:fraction=0.1", {"2bit", "fraction"}},
      {"fp16:threshold=0.1", {"fp16", "threshold"}},
      {"none:error_feedback=on", {"error_feedback", "none"}},
      {"2bit:error_feedback=yes", {"error_feedback", "'yes'"}},
      {"2bit:threshold=0.5,threshold=0.6", {"threshold", "twice"}},
      {"2bit:error_feedback=on,error_feedback=off", {"error_feedback", "twice"}},
      {"2bit:bogus=1", {"'bogus'"}},
      {"2bit:", {"field", "''"}},
      {"2bit:threshold", {"field", "'threshold'"}},
      {"2bit:threshold=0.5,", {"field", "''"}},
  };
  for (const Case& c : cases) {
    std::string message;
    EXPECT_EQ(code_of([&] { CompressionConfig::parse(c.text); }, &message), ErrorCode::kInvalidArgument) << c.text;
    for (const char* word : c.named) EXPECT_NE(message.find(word), std::string::npos) << c.text << ": " << message;
  }
}

TEST(CompressionConfig, ValidateChecksHandBuiltConfigs) {
  CompressionConfig c;
  c.validate();
  c.threshold_or_fraction = 0.5;
  EXPECT_EQ(code_of([&] { c.validate(); }), ErrorCode::kInvalidArgument);  // none takes no value
  c = CompressionConfig{CompressionMode::kTopK, 0.0, true};
  EXPECT_EQ(code_of([&] { c.validate(); }), ErrorCode::kInvalidArgument);
  c = CompressionConfig{static_cast<CompressionMode>(99), 0.0, false};
  EXPECT_EQ(code_of([&] { c.validate(); }), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of([&] { GradientCodec codec(c); }), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of([&] { CompressionConfig::defaults(CompressionMode::kTopK); }), ErrorCode::kInvalidArgument);
  c = CompressionConfig{CompressionMode::k2Bit, std::nan(""), true};
  EXPECT_EQ(code_of([&] { GradientCodec codec(c); }), ErrorCode::kInvalidArgument);
}

// --- dense formats ----------------------------------------------------------------

TEST(CompressionCodecNone, RoundTripsBitForBit) {
  const GradientCodec codec(config("none"));
  const std::vector<float> g = {1.5f, -0.0f, 0.0f, -3.25e-40f, 3.4e38f, -7.0f, 0.1f};
  const auto bytes = encode(codec, g);
  EXPECT_EQ(bytes.size(), 4 * g.size());
  expect_same_floats(g, decode(codec, bytes, g.size()));
}

TEST(CompressionCodecFp16, RoundsToNearestEvenAndRoundTripsRepresentableValues) {
  const GradientCodec codec(config("fp16"));
  // Representable in binary16: round-trip exactly, signs of zero included.
  const std::vector<float> exact = {0.0f, -0.0f, 1.0f, -2.5f, 65504.0f, -65504.0f, 6.103515625e-05f,
                                    5.9604644775390625e-08f, -0.333251953125f};
  const auto bytes = encode(codec, exact);
  ASSERT_EQ(bytes.size(), 2 * exact.size());
  expect_same_floats(exact, decode(codec, bytes, exact.size()));
  for (size_t i = 0; i < exact.size(); ++i) {
    uint16_t h;
    std::memcpy(&h, bytes.data() + 2 * i, 2);
    EXPECT_EQ(h, core::float_to_half(exact[i]));
  }
  // Ties go to the even neighbour; 65519 is the largest value that does not round to Inf.
  const std::vector<float> ties = {1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f, -(1.0f + 0x1p-11f), 65519.0f, 0x1p-25f,
                                   3 * 0x1p-25f};
  expect_same_floats({1.0f, 1.0f + 0x1p-9f, -1.0f, 65504.0f, 0.0f, 0x1p-23f}, decode(codec, encode(codec, ties), 6));
}

TEST(CompressionCodecFp16, ValuesBeyondItsRangeAreRejectedByIndex) {
  const GradientCodec codec(config("fp16"));
  std::string message;
  std::vector<float> g(9, 1.0f);
  g[3] = 65520.0f;
  EXPECT_EQ(code_of([&] { encode(codec, g); }, &message), ErrorCode::kInvalidArgument);
  EXPECT_NE(message.find("element 3"), std::string::npos) << message;
  EXPECT_NE(message.find("fp16"), std::string::npos) << message;
  g[3] = -1e30f;
  EXPECT_EQ(code_of([&] { encode(codec, g); }, &message), ErrorCode::kInvalidArgument);
  EXPECT_NE(message.find("element 3"), std::string::npos) << message;
}

TEST(CompressionCodecBf16, RoundsToNearestEvenAndRoundTripsRepresentableValues) {
  const GradientCodec codec(config("bf16"));
  const std::vector<float> exact = {0.0f, -0.0f, 1.0f, -2.5f, 0x1.fep127f, 0x1p-133f, -0.33203125f};
  const auto bytes = encode(codec, exact);
  ASSERT_EQ(bytes.size(), 2 * exact.size());
  expect_same_floats(exact, decode(codec, bytes, exact.size()));
  const std::vector<float> ties = {1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-8f, -(1.0f + 0x1p-8f), 1.0f + 0x1p-8f + 0x1p-20f};
  expect_same_floats({1.0f, 1.0f + 0x1p-6f, -1.0f, 1.0f + 0x1p-7f}, decode(codec, encode(codec, ties), 4));
  // The largest float rounds past bf16's largest finite value.
  std::string message;
  EXPECT_EQ(code_of([&] { encode(codec, {1.0f, std::numeric_limits<float>::max()}); }, &message),
            ErrorCode::kInvalidArgument);
  EXPECT_NE(message.find("element 1"), std::string::npos) << message;
}

TEST(CompressionCodec2Bit, EncodesMxnetLayoutWithTiesAtTheThreshold) {
  const GradientCodec codec(config("2bit:threshold=0.5,magnitude=threshold"));
  // 18 values: one full word (the vectorised path) and two values in a
  // second (the scalar tail), ties at +-threshold in both.
  const std::vector<float> g = {0.5f,  -0.5f, 0.49999997f, -0.0f,  // byte 0: 11 10 00 00
                                3.0f,  -7.0f, 0.0f,        0.5f,   // byte 1: 11 10 00 11
                                -0.5f, 0.25f, -0.25f,      1e-30f, // byte 2: 10 00 00 00
                                0.0f,  0.0f,  0.0f,        -1.0f,  // byte 3: 00 00 00 10
                                0.5f,  -0.5f};                     // byte 4: 11 10 00 00
  const auto bytes = encode(codec, g);
  EXPECT_EQ(codec.max_encoded_size(g.size()), 8u);
  EXPECT_EQ(bytes, (std::vector<uint8_t>{0xE0, 0xE3, 0x80, 0x02, 0xE0, 0x00, 0x00, 0x00}));
  expect_same_floats({0.5f, -0.5f, 0.0f, 0.0f, 0.5f, -0.5f, 0.0f, 0.5f, -0.5f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f,
                      -0.5f, 0.5f, -0.5f},
                     decode(codec, bytes, g.size()));
}

TEST(CompressionCodec2Bit, MatchesTheReferenceAtEveryLength) {
  const GradientCodec codec(config("2bit:threshold=0.3,magnitude=threshold"));
  for (size_t n : {0, 1, 3, 15, 16, 17, 31, 32, 33, 1000, 1021}) {
    const auto g = random_values(n, static_cast<uint32_t>(n), 1.0f);
    const auto bytes = encode(codec, g);
    EXPECT_EQ(bytes, reference_2bit(g, 0.3f)) << n;
    EXPECT_EQ(bytes.size(), codec.max_encoded_size(n));
    const auto decoded = decode(codec, bytes, n);
    for (size_t i = 0; i < n; ++i) {
      EXPECT_EQ(decoded[i], g[i] >= 0.3f ? 0.3f : g[i] <= -0.3f ? -0.3f : 0.0f) << n << " " << i;
    }
  }
}

TEST(CompressionCodec1Bit, SignDecidesAndZeroGoesNegative) {
  const GradientCodec codec(config("1bit:threshold=0.25"));
  const std::vector<float> g = {1.0f, -1.0f, 0.0f, -0.0f, 1e-30f, -1e-30f, 5.0f, -5.0f,  // 1000 1010
                                0.25f, 0.25f, 0.25f, 0.25f, 0.0f, 0.0f, 0.0f, 0.0f,      // 1111 0000
                                0.0f};                                                   // 17th: 0
  const auto bytes = encode(codec, g);
  EXPECT_EQ(codec.max_encoded_size(g.size()), 4u);
  EXPECT_EQ(bytes, (std::vector<uint8_t>{0x8A, 0xF0, 0x00, 0x00}));
  std::vector<float> expected;
  for (float v : g) expected.push_back(v > 0 ? 0.25f : -0.25f);
  expect_same_floats(expected, decode(codec, bytes, g.size()));
}

TEST(CompressionCodec1Bit, MatchesTheReferenceAtEveryLength) {
  const GradientCodec codec(config("1bit:threshold=0.25"));
  for (size_t n : {0, 1, 7, 31, 32, 33, 63, 64, 65, 1000, 1021}) {
    auto g = random_values(n, static_cast<uint32_t>(n) + 7, 1.0f);
    for (size_t i = 0; i < n; i += 5) g[i] = (i % 2) ? 0.0f : -0.0f;
    const auto bytes = encode(codec, g);
    EXPECT_EQ(bytes, reference_1bit(g)) << n;
    EXPECT_EQ(bytes.size(), codec.max_encoded_size(n));
    const auto decoded = decode(codec, bytes, n);
    for (size_t i = 0; i < n; ++i) EXPECT_EQ(decoded[i], g[i] > 0 ? 0.25f : -0.25f) << n << " " << i;
  }
}

// --- sparse formats -------------------------------------------------------------------

TEST(CompressionCodecTopK, CountIsCeilOfFractionAtLeastOne) {
  EXPECT_EQ(GradientCodec::topk_count(0.25, 0), 0u);
  EXPECT_EQ(GradientCodec::topk_count(0.001, 5), 1u);
  EXPECT_EQ(GradientCodec::topk_count(0.1, 10), 1u);
  EXPECT_EQ(GradientCodec::topk_count(0.1, 11), 2u);
  EXPECT_EQ(GradientCodec::topk_count(0.5, 7), 4u);
  EXPECT_EQ(GradientCodec::topk_count(1.0, 7), 7u);
  EXPECT_EQ(GradientCodec(config("topk:fraction=0.5")).max_encoded_size(7), 32u);
}

TEST(CompressionCodecTopK, KeepsTheLargestMagnitudesTiesToTheLowerIndex) {
  const GradientCodec codec(config("topk:fraction=0.25"));
  const std::vector<float> g = {1.0f, -3.0f, 0.0f, 2.0f, 3.0f, -0.0f, -3.0f, 1.0f};  // k = 2
  EXPECT_EQ(encode(codec, g), pairs({{1, -3.0f}, {4, 3.0f}}));
  expect_same_floats({-0.0f, -3.0f, -0.0f, -0.0f, 3.0f, -0.0f, -0.0f, -0.0f}, decode(codec, encode(codec, g), 8));

  // All magnitudes equal: the lowest indices, whatever the signs.
  std::vector<float> same(100);
  for (size_t i = 0; i < same.size(); ++i) same[i] = (i * 7 % 3) ? 1.5f : -1.5f;
  const GradientCodec tenth(config("topk:fraction=0.1"));
  std::vector<std::pair<uint32_t, float>> expected;
  for (uint32_t i = 0; i < 10; ++i) expected.emplace_back(i, same[i]);
  EXPECT_EQ(encode(tenth, same), pairs(expected));

  // A larger case with many ties: the k-th magnitude's copies go lowest-index
  // first, and running it again gives the same bytes.
  std::vector<float> g2(1001);
  std::mt19937 rng(3);
  for (float& v : g2) v = static_cast<float>(static_cast<int>(rng() % 9) - 4) * 0.5f;
  const auto first = encode(tenth, g2);
  EXPECT_EQ(encode(tenth, g2), first);
  EXPECT_EQ(first, reference_topk(g2, 101));
}

TEST(CompressionCodecTopK, MatchesTheSortingReference) {
  // Magnitudes that share their top bits (the encoder's first radix step
  // cannot separate them) and values repeated at random positions.
  for (double fraction : {0.0001, 0.037, 0.5, 0.999}) {
    const GradientCodec codec(CompressionConfig{CompressionMode::kTopK, fraction, true});
    for (size_t n : {1, 2, 31, 5000}) {
      auto g = random_values(n, static_cast<uint32_t>(n), 1.0f);
      for (size_t i = 0; i < n; i += 3) g[i] = 0.75f + static_cast<float>(i % 17) * 0x1p-20f;
      for (size_t i = 1; i < n; i += 7) g[i] = -g[i / 2];
      EXPECT_EQ(encode(codec, g), reference_topk(g, GradientCodec::topk_count(fraction, n))) << fraction << " " << n;
    }
  }
}

TEST(CompressionCodecTopK, EmptyAndWholeTensors) {
  const GradientCodec all(config("topk:fraction=1"));
  EXPECT_TRUE(encode(all, {}).empty());
  decode(all, {}, 0);
  const std::vector<float> g = {-0.0f, 2.0f, -1.0f};
  EXPECT_EQ(encode(all, g), pairs({{0, -0.0f}, {1, 2.0f}, {2, -1.0f}}));
  expect_same_floats(g, decode(all, encode(all, g), 3));
}

TEST(CompressionCodecThreshold, SendsEveryValueAtOrAboveTheThreshold) {
  const GradientCodec codec(config("threshold:threshold=0.5"));
  const std::vector<float> g = {0.5f, -0.5f, 0.49999997f, -0.0f, 2.0f, 0.0f, -0.49999997f};
  EXPECT_EQ(codec.max_encoded_size(g.size()), 56u);
  EXPECT_EQ(encode(codec, g), pairs({{0, 0.5f}, {1, -0.5f}, {4, 2.0f}}));
  expect_same_floats({0.5f, -0.5f, -0.0f, -0.0f, 2.0f, -0.0f, -0.0f}, decode(codec, encode(codec, g), g.size()));
  EXPECT_TRUE(encode(codec, {0.1f, -0.2f}).empty());
  EXPECT_TRUE(encode(codec, {}).empty());
}

// --- what every mode shares ------------------------------------------------------------

TEST(CompressionCodecAll, DecodeAddsIntoTheDestination) {
  for (const char* text : kAllModes) {
    const GradientCodec codec(config(text));
    const auto g = random_values(37, 11, 2.0f);
    const auto bytes = encode(codec, g);
    const auto alone = decode(codec, bytes, g.size());
    std::vector<float> dst(g.size());
    for (size_t i = 0; i < dst.size(); ++i) dst[i] = static_cast<float>(i);
    codec.decode_add(bytes.data(), bytes.size(), dst.data(), dst.size());
    for (size_t i = 0; i < dst.size(); ++i) EXPECT_EQ(dst[i], static_cast<float>(i) + alone[i]) << text << " " << i;
  }
}

TEST(CompressionCodecAll, NonFiniteInputIsRejectedNamingTheIndex) {
  for (const char* text : kAllModes) {
    const GradientCodec codec(config(text));
    for (size_t bad_index : {size_t{5}, size_t{37}}) {  // in the vectorised words, and in the tail
      for (float bad : {kNaN, kInf, -kInf}) {
        auto g = random_values(40, 5, 1.0f);
        g[bad_index] = bad;
        std::string message;
        EXPECT_EQ(code_of([&] { encode(codec, g); }, &message), ErrorCode::kInvalidArgument) << text;
        EXPECT_NE(message.find("element " + std::to_string(bad_index)), std::string::npos) << text << ": " << message;
      }
    }
  }
}

TEST(CompressionCodecAll, TooSmallAnOutputBufferIsRejected) {
  for (const char* text : kAllModes) {
    const GradientCodec codec(config(text));
    const std::vector<float> g(20, 1.0f);
    std::vector<uint8_t> out(codec.max_encoded_size(g.size()) - 1);
    EXPECT_EQ(code_of([&] { codec.encode(g.data(), g.size(), out.data(), out.size()); }),
              ErrorCode::kInvalidArgument)
        << text;
  }
}

TEST(CompressionCodecAll, WrongLengthsAreProtocolErrors) {
  for (const char* text : kAllModes) {
    const GradientCodec codec(config(text));
    const size_t n = 20;
    const auto bytes = encode(codec, std::vector<float>(n, 1.0f));
    std::vector<float> dst(n, 7.0f);
    for (long delta : {-1L, 1L, 8L}) {
      std::vector<uint8_t> wrong = bytes;
      wrong.resize(static_cast<size_t>(static_cast<long>(bytes.size()) + delta), 0);
      EXPECT_EQ(code_of([&] { codec.decode_add(wrong.data(), wrong.size(), dst.data(), n); }), ErrorCode::kProtocol)
          << text << " " << delta;
    }
    EXPECT_EQ(dst, std::vector<float>(n, 7.0f)) << text;
    // The same bytes read for another element count (threshold's pairs are
    // as valid for more elements, so only its own lengths are checked).
    if (codec.config().mode == CompressionMode::kThreshold) continue;
    std::vector<float> longer(n + 40, 7.0f);
    EXPECT_EQ(code_of([&] { codec.decode_add(bytes.data(), bytes.size(), longer.data(), n + 40); }),
              ErrorCode::kProtocol)
        << text;
  }
}

TEST(CompressionCodecAll, MalformedContentIsAProtocolErrorAndLeavesTheDestination) {
  struct Case {
    const char* config;
    size_t n;
    std::vector<uint8_t> bytes;
    const char* why;
  };
  const uint16_t half_nan = 0x7e00, half_inf = 0xfc00, bf16_inf = 0x7f80;
  auto u16 = [](std::vector<uint16_t> values) {
    std::vector<uint8_t> out(2 * values.size());
    std::memcpy(out.data(), values.data(), out.size());
    return out;
  };
  std::vector<uint8_t> none_nan(8, 0);
  std::memcpy(none_nan.data() + 4, &kNaN, 4);
  const Case cases[] = {
      {"none", 2, none_nan, "NaN"},
      {"fp16", 3, u16({0x3c00, half_nan, 0}), "NaN"},
      {"fp16", 3, u16({0x3c00, 0, half_inf}), "-Inf"},
      {"bf16", 2, u16({bf16_inf, 0}), "Inf"},
      {"2bit:magnitude=threshold", 16, {0x40, 0, 0, 0}, "code 01"},
      {"2bit:magnitude=threshold", 16, {0, 0, 0, 0x01}, "code 01 in the last value"},
      {"2bit:magnitude=threshold", 5, {0, 0x30, 0, 0}, "padding value 5"},
      {"2bit:magnitude=threshold", 5, {0, 0, 0, 0x80}, "padding value 12"},
      {"1bit", 9, {0, 0x40, 0, 0}, "padding bit of value 9"},
      {"1bit", 31, {0, 0, 0, 0x01}, "padding bit of value 31"},
      {"topk:fraction=0.5", 4, pairs({{1, 1.0f}, {4, 1.0f}}), "index out of range"},
      {"topk:fraction=0.5", 4, pairs({{2, 1.0f}, {1, 1.0f}}), "descending"},
      {"topk:fraction=0.5", 4, pairs({{1, 1.0f}, {1, 1.0f}}), "repeated"},
      {"topk:fraction=0.5", 4, pairs({{0, 1.0f}, {1, kInf}}), "Inf"},
      {"topk:fraction=0.5", 4, pairs({{0, 1.0f}}), "too few pairs"},
      {"threshold:threshold=0.5", 4, pairs({{0, 1.0f}, {1, 0.25f}}), "below the threshold"},
      {"threshold:threshold=0.5", 4, pairs({{0, 1.0f}, {1, -kNaN}}), "NaN"},
      {"threshold:threshold=0.5", 4, pairs({{3, 1.0f}, {0, 1.0f}}), "descending"},
      {"threshold:threshold=0.5", 2, pairs({{0, 1.0f}, {1, 1.0f}, {1, 1.0f}}), "more pairs than elements"},
      {"threshold:threshold=0.5", 4, pairs({{0xffffffffu, 1.0f}}), "index out of range"},
  };
  for (const Case& c : cases) {
    const GradientCodec codec(config(c.config));
    std::vector<float> dst(c.n, 7.0f);
    std::string message;
    EXPECT_EQ(code_of([&] { codec.decode_add(c.bytes.data(), c.bytes.size(), dst.data(), c.n); }, &message),
              ErrorCode::kProtocol)
        << c.config << ": " << c.why;
    EXPECT_NE(message.find("malformed"), std::string::npos) << message;
    EXPECT_EQ(dst, std::vector<float>(c.n, 7.0f)) << c.config << ": " << c.why;
  }
}

TEST(CompressionCodecAll, RandomAndMutatedBytesDecodeOrAreRefusedNeverWorse) {
  // What a hostile or broken peer might send: a valid encoding with bits
  // flipped, cut or extended, and plain random bytes. Each decodes (to
  // finite values) or is Error(kProtocol) with the destination untouched;
  // the sanitizer build checks that no read strays.
  std::mt19937 rng(99);
  for (const char* text : kAllModes) {
    const GradientCodec codec(config(text));
    for (int trial = 0; trial < 300; ++trial) {
      const size_t n = rng() % 70;
      std::vector<uint8_t> bytes = encode(codec, random_values(n, rng(), 1.0f));
      switch (trial % 3) {
        case 0:
          if (!bytes.empty()) bytes[rng() % bytes.size()] ^= static_cast<uint8_t>(1u << (rng() % 8));
          break;
        case 1: bytes.resize(rng() % (bytes.size() + 9), static_cast<uint8_t>(rng())); break;
        default:
          for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng());
      }
      std::vector<float> dst(n, 7.0f);
      try {
        codec.decode_add(bytes.data(), bytes.size(), dst.data(), n);
        for (float v : dst) EXPECT_TRUE(std::isfinite(v)) << text << " trial " << trial;
      } catch (const core::Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::kProtocol) << text << " trial " << trial << ": " << e.what();
        EXPECT_EQ(dst, std::vector<float>(n, 7.0f)) << text << " trial " << trial;
      }
    }
  }
}

// --- error feedback -------------------------------------------------------------------------

// Runs steps of compensate / encode / update over one part and returns
// (sum of inputs, sum of decoded values) per element, in double.
struct Sums {
  std::vector<double> inputs;
  std::vector<double> decoded;
  bool lost_something = false;
  double max_sent_and_kept = 0;  // max over steps and elements of |compensated| + |decoded|
};

Sums run_steps(const GradientCodec& codec, ErrorFeedback& feedback, const std::vector<std::vector<float>>& steps) {
  const size_t n = steps.at(0).size();
  Sums sums{std::vector<double>(n, 0.0), std::vector<double>(n, 0.0)};
  for (const auto& gradient : steps) {
    std::vector<float> send = gradient;
    feedback.compensate(42, 1000, send.data(), n);
    const auto bytes = encode(codec, send);
    feedback.update(42, 1000, send.data(), n, codec, bytes.data(), bytes.size());
    const auto decoded = decode(codec, bytes, n);
    for (size_t i = 0; i < n; ++i) {
      sums.inputs[i] += gradient[i];
      sums.decoded[i] += decoded[i];
      sums.lost_something = sums.lost_something || decoded[i] != send[i];
      sums.max_sent_and_kept = std::max(sums.max_sent_and_kept, std::fabs(double{send[i]}) + std::fabs(double{decoded[i]}));
    }
  }
  return sums;
}

TEST(CompressionErrorFeedback, ResidualCarriesExactlyWhatWasNotSent) {
  // Gradients are multiples of 2^-12 in [-4, 4] (fine enough that fp16 and
  // bf16 lose bits), thresholds multiples of 2^-2, 12 steps: every
  // compensated value, residual, decoded value and sum is a multiple of
  // 2^-12 below 2^7 in magnitude (fp16/bf16 round such a value to itself or
  // to a multiple of their coarser ulp, still a multiple of 2^-12), which
  // needs at most 19 of float's 24 significant bits, so every float addition
  // and subtraction here is exact and so is the equality checked.
  std::mt19937 rng(17);
  std::vector<std::vector<float>> steps(12, std::vector<float>(37));
  for (auto& step : steps) {
    for (float& v : step) v = static_cast<float>(static_cast<int>(rng() % 32769) - 16384) / 4096.0f;
  }
  for (const char* text : kLossyModes) {
    const GradientCodec codec(config(text));
    ErrorFeedback feedback;
    const Sums sums = run_steps(codec, feedback, steps);
    EXPECT_TRUE(sums.lost_something) << text << ": nothing to carry, the test would prove nothing";
    const std::vector<float>* residual = feedback.residual(42, 1000);
    ASSERT_NE(residual, nullptr);
    for (size_t i = 0; i < sums.inputs.size(); ++i) {
      EXPECT_EQ(sums.decoded[i] + (*residual)[i], sums.inputs[i]) << text << " element " << i;
    }
  }
}

TEST(CompressionErrorFeedback, ResidualCarriesWhatWasNotSentUpToRounding) {
  // Arbitrary floats: each step rounds twice, c = g + r and r' = c - d, each
  // by at most 2^-24 of its result, |c| or |r'| <= |c| + |d|, so after S
  // steps the balance is off by at most S * 2^-23 * max(|c| + |d|) per
  // element (the test's sums are doubles, whose rounding is 2^-29 smaller).
  const int kSteps = 20;
  std::vector<std::vector<float>> steps;
  for (int s = 0; s < kSteps; ++s) steps.push_back(random_values(101, 100 + s, 1.0f));
  for (const char* text : kLossyModes) {
    const GradientCodec codec(config(text));
    ErrorFeedback feedback;
    const Sums sums = run_steps(codec, feedback, steps);
    EXPECT_TRUE(sums.lost_something) << text;
    const std::vector<float>& residual = *feedback.residual(42, 1000);
    const double tolerance = kSteps * std::ldexp(1.0, -23) * sums.max_sent_and_kept;
    for (size_t i = 0; i < residual.size(); ++i) {
      EXPECT_NEAR(sums.decoded[i] + residual[i], sums.inputs[i], tolerance) << text << " element " << i;
    }
  }
}

TEST(CompressionErrorFeedback, PartsAreIndependentAndKeepTheirSize) {
  const GradientCodec codec(config("2bit:threshold=1,magnitude=threshold"));
  ErrorFeedback feedback;
  EXPECT_EQ(feedback.residual(7, 0), nullptr);
  // Key 7 in two parts, [0, 3) and [3, 5), and key 8's part at 0.
  std::vector<float> a = {0.25f, 1.5f, -0.5f}, b = {2.0f, -0.75f}, c = {0.5f, 0.5f};
  feedback.compensate(7, 0, a.data(), 3);
  feedback.compensate(7, 3, b.data(), 2);
  feedback.compensate(8, 0, c.data(), 2);
  EXPECT_EQ(a, (std::vector<float>{0.25f, 1.5f, -0.5f}));  // first use: zero residual
  EXPECT_EQ(feedback.num_parts(), 3u);
  for (auto* part : {&a, &b, &c}) {
    const uint64_t key = part == &c ? 8 : 7;
    const int64_t begin = part == &b ? 3 : 0;
    const auto bytes = encode(codec, *part);
    feedback.update(key, begin, part->data(), part->size(), codec, bytes.data(), bytes.size());
  }
  EXPECT_EQ(*feedback.residual(7, 0), (std::vector<float>{0.25f, 0.5f, -0.5f}));
  EXPECT_EQ(*feedback.residual(7, 3), (std::vector<float>{1.0f, -0.75f}));
  EXPECT_EQ(*feedback.residual(8, 0), (std::vector<float>{0.5f, 0.5f}));
  std::vector<float> next = {1.0f, 1.0f, 1.0f};
  feedback.compensate(7, 0, next.data(), 3);
  EXPECT_EQ(next, (std::vector<float>{1.25f, 1.5f, 0.5f}));

  EXPECT_EQ(code_of([&] { feedback.compensate(7, 3, next.data(), 3); }), ErrorCode::kShapeMismatch);
  EXPECT_EQ(code_of([&] { feedback.update(8, 0, next.data(), 3, codec, nullptr, 0); }), ErrorCode::kShapeMismatch);
  feedback.clear();
  EXPECT_EQ(feedback.num_parts(), 0u);
  EXPECT_EQ(feedback.residual(7, 0), nullptr);
}

TEST(CompressionErrorFeedback, PartsMayBeWorkedOnFromSeveralThreads) {
  // A store encodes the parts of one push on several threads: each thread
  // adds its own parts while the others use theirs.
  const GradientCodec codec(config("2bit:threshold=1,magnitude=threshold"));
  ErrorFeedback feedback;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int64_t part = 0; part < 50; ++part) {
        for (int step = 0; step < 3; ++step) {
          std::vector<float> g(16, 0.75f);
          feedback.compensate(static_cast<uint64_t>(t), part * 16, g.data(), g.size());
          const auto bytes = encode(codec, g);
          feedback.update(static_cast<uint64_t>(t), part * 16, g.data(), g.size(), codec, bytes.data(), bytes.size());
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(feedback.num_parts(), 200u);
  // 0.75 kept, then 1.5 -> 1 sent and 0.5 kept, then 1.25 -> 1 sent and 0.25 kept.
  for (uint64_t t = 0; t < 4; ++t) {
    for (int64_t part = 0; part < 50; ++part) EXPECT_EQ(*feedback.residual(t, part * 16), std::vector<float>(16, 0.25f));
  }
}

TEST(CompressionErrorFeedback, BytesThatDoNotDecodeRestartTheResidual) {
  const GradientCodec codec(config("2bit:threshold=1,magnitude=threshold"));
  ErrorFeedback feedback;
  std::vector<float> g = {0.5f, 0.25f};
  feedback.compensate(1, 0, g.data(), 2);
  const auto bytes = encode(codec, g);
  feedback.update(1, 0, g.data(), 2, codec, bytes.data(), bytes.size());
  EXPECT_EQ(*feedback.residual(1, 0), (std::vector<float>{0.5f, 0.25f}));
  const std::vector<uint8_t> bad = {0x40, 0, 0, 0};
  EXPECT_EQ(code_of([&] { feedback.update(1, 0, g.data(), 2, codec, bad.data(), bad.size()); }), ErrorCode::kProtocol);
  EXPECT_EQ(*feedback.residual(1, 0), (std::vector<float>{0.0f, 0.0f}));
}

}  // namespace
}  // namespace dt::ps::compression
