// The codec layer of gradient compression: config text and every wire
// format bit for bit. What every mode shares (hostile bytes included):
// compression_codec_all_test.cc; error feedback:
// compression_error_feedback_test.cc.
#include <gtest/gtest.h>

#include "compression_test_util.h"

namespace dt::ps::compression {
namespace {

using namespace compression_test;

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

}  // namespace
}  // namespace dt::ps::compression
