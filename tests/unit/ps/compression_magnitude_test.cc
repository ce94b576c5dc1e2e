// 2bit's default form (magnitude=mean, issue 42): the threshold chooses which
// elements go, and they decode to +-the mean |value| of those that crossed,
// sent as a float32 before MXNet's codes. The config text, the wire form, the
// receiver's checks on the magnitude, and error feedback over it.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

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

float leading_float(const std::vector<uint8_t>& bytes) {
  float value;
  std::memcpy(&value, bytes.data(), 4);
  return value;
}

TEST(Compression2BitMagnitude, MeanIsTheDefaultAndThresholdIsMxnetsForm) {
  EXPECT_EQ(config("2bit").magnitude, Magnitude::kMean);
  EXPECT_EQ(config("2bit:magnitude=mean"), config("2bit"));
  // The default is left out of the canonical text, MXNet's form named.
  EXPECT_EQ(config("2bit:magnitude=mean").to_string(), "2bit:threshold=0.5,error_feedback=on");
  EXPECT_EQ(config("2bit:magnitude=threshold,threshold=2").to_string(),
            "2bit:threshold=2,magnitude=threshold,error_feedback=on");
  const CompressionConfig mxnet = config("2bit:threshold=0.5,gradient_scale=0.125,magnitude=threshold");
  EXPECT_EQ(CompressionConfig::parse(mxnet.to_string()), mxnet);
  EXPECT_NE(mxnet, config("2bit:threshold=0.5,gradient_scale=0.125"));
  // Two workers that differ in the magnitude do not agree.
  EXPECT_EQ(CompressionConfig::agree(config("2bit"), config("2bit:magnitude=threshold")), std::nullopt);
  // A trainer's scale keeps the magnitude the spec named.
  EXPECT_EQ(config("2bit:magnitude=threshold").with_gradient_scale(0.125).magnitude, Magnitude::kThreshold);
}

TEST(Compression2BitMagnitude, ParseErrorsNameTheField) {
  struct Case {
    const char* text;
    std::vector<const char*> named;
  };
  const Case cases[] = {
      {"2bit:magnitude=max", {"magnitude", "'max'"}},
      {"2bit:magnitude=", {"magnitude", "''"}},
      {"2bit:magnitude=mean,magnitude=threshold", {"magnitude", "twice"}},
      {"1bit:magnitude=mean", {"1bit", "magnitude"}},
      {"threshold:threshold=1,magnitude=threshold", {"threshold", "magnitude"}},
      {"fp16:magnitude=mean", {"fp16", "magnitude"}},
  };
  for (const Case& c : cases) {
    std::string message;
    EXPECT_EQ(code_of([&] { CompressionConfig::parse(c.text); }, &message), ErrorCode::kInvalidArgument) << c.text;
    for (const char* word : c.named) EXPECT_NE(message.find(word), std::string::npos) << c.text << ": " << message;
  }
  CompressionConfig hand_built{CompressionMode::k1Bit, 0.5, true};
  hand_built.magnitude = Magnitude::kThreshold;
  EXPECT_EQ(code_of([&] { hand_built.validate(); }), ErrorCode::kInvalidArgument);
}

TEST(Compression2BitMagnitude, SendsTheMeanOfWhatCrossedBeforeMxnetsCodes) {
  const GradientCodec mean(config("2bit:threshold=0.5"));
  const GradientCodec mxnet(config("2bit:threshold=0.5,magnitude=threshold"));
  // Crossing: 0.5, -0.5, 3, -7, 0.5, -1 (|.| sum 12.5, 6 of them: 2.0833..).
  const std::vector<float> g = {0.5f, -0.5f, 0.49999997f, -0.0f, 3.0f, -7.0f, 0.0f, 0.5f,
                                0.25f, 0.0f, -0.25f,       1e-30f, 0.0f, 0.0f, 0.0f, -1.0f, 0.0f};
  const auto bytes = encode(mean, g);
  ASSERT_EQ(bytes.size(), mean.max_encoded_size(g.size()));
  ASSERT_EQ(bytes.size(), 4u + 8u);  // 17 values: two words
  const float m = leading_float(bytes);
  EXPECT_EQ(m, static_cast<float>(12.5 / 6));
  // The codes are MXNet's, byte for byte.
  const auto codes = encode(mxnet, g);
  EXPECT_EQ(std::vector<uint8_t>(bytes.begin() + 4, bytes.end()), codes);
  const auto decoded = decode(mean, bytes, g.size());
  const auto decoded_mxnet = decode(mxnet, codes, g.size());
  for (size_t i = 0; i < g.size(); ++i) {
    EXPECT_EQ(decoded[i], decoded_mxnet[i] * (m / 0.5f)) << i;  // +-m where MXNet has +-t
  }
}

TEST(Compression2BitMagnitude, MatchesTheMeanAtEveryLength) {
  const GradientCodec codec(config("2bit:threshold=0.3"));
  for (size_t n : {1, 3, 15, 16, 17, 31, 32, 33, 1000, 1021}) {
    const auto g = random_values(n, static_cast<uint32_t>(n), 1.0f);
    double sum = 0;
    size_t count = 0;
    for (float v : g) {
      if (std::fabs(v) >= 0.3f) {
        sum += std::fabs(v);
        ++count;
      }
    }
    const float expected = count == 0 ? 0.3f : static_cast<float>(sum / static_cast<double>(count));
    const auto bytes = encode(codec, g);
    EXPECT_EQ(bytes.size(), 4 + 4 * ((n + 15) / 16)) << n;
    EXPECT_EQ(leading_float(bytes), expected) << n;
    EXPECT_GE(leading_float(bytes), 0.3f) << n;
    const auto decoded = decode(codec, bytes, n);
    for (size_t i = 0; i < n; ++i) {
      EXPECT_EQ(decoded[i], g[i] >= 0.3f ? expected : g[i] <= -0.3f ? -expected : 0.0f) << n << " " << i;
    }
  }
  // Nothing crosses: the magnitude is the threshold, every value 0; no
  // elements: no bytes at all.
  const auto quiet = encode(codec, std::vector<float>(20, 0.1f));
  EXPECT_EQ(leading_float(quiet), 0.3f);
  EXPECT_EQ(decode(codec, quiet, 20), std::vector<float>(20, 0.0f));
  EXPECT_EQ(codec.max_encoded_size(0), 0u);
  EXPECT_TRUE(encode(codec, {}).empty());
}

TEST(Compression2BitMagnitude, ReceiverRefusesAMagnitudeThatCannotBeAMean) {
  const GradientCodec codec(config("2bit:threshold=0.5"));
  const std::vector<float> g = {1.0f, -2.0f, 0.0f, 0.75f};
  const auto good = encode(codec, g);
  const float bad_values[] = {0.25f,  // below the threshold
                              0.49999997f, -1.0f, 0.0f, std::numeric_limits<float>::quiet_NaN(),
                              std::numeric_limits<float>::infinity()};
  for (float bad : bad_values) {
    std::vector<uint8_t> bytes = good;
    std::memcpy(bytes.data(), &bad, 4);
    std::vector<float> dst(g.size(), 7.0f);
    std::string message;
    EXPECT_EQ(code_of([&] { codec.decode_add(bytes.data(), bytes.size(), dst.data(), dst.size()); }, &message),
              ErrorCode::kProtocol)
        << bad;
    EXPECT_NE(message.find("magnitude"), std::string::npos) << message;
    EXPECT_EQ(dst, std::vector<float>(g.size(), 7.0f)) << bad;
  }
  // MXNet's form (the codes alone) is a wrong length for the mean form, and
  // the mean form's bytes are one for MXNet's.
  const GradientCodec mxnet(config("2bit:threshold=0.5,magnitude=threshold"));
  std::vector<float> dst(g.size(), 0.0f);
  const auto codes = encode(mxnet, g);
  EXPECT_EQ(code_of([&] { codec.decode_add(codes.data(), codes.size(), dst.data(), dst.size()); }),
            ErrorCode::kProtocol);
  EXPECT_EQ(code_of([&] { mxnet.decode_add(good.data(), good.size(), dst.data(), dst.size()); }),
            ErrorCode::kProtocol);
  // A magnitude exactly at the threshold is a mean of values at it.
  std::vector<uint8_t> at_threshold = good;
  const float t = 0.5f;
  std::memcpy(at_threshold.data(), &t, 4);
  EXPECT_EQ(decode(codec, at_threshold, g.size()), (std::vector<float>{0.5f, -0.5f, 0.0f, 0.5f}));
}

TEST(Compression2BitMagnitude, ErrorFeedbackCarriesWhatTheMeanDidNotSend) {
  // As compression_test.cc's rounding bound: after S steps the balance
  // inputs == decoded + residual is off by at most S * 2^-23 * max(|c|+|d|).
  const GradientCodec codec(config("2bit:threshold=0.5"));
  ErrorFeedback feedback;
  const int kSteps = 20;
  const size_t n = 101;
  std::vector<double> inputs(n, 0.0), decoded_sum(n, 0.0);
  double max_sent_and_kept = 0;
  for (int s = 0; s < kSteps; ++s) {
    const auto gradient = random_values(n, 200 + static_cast<uint32_t>(s), 1.0f);
    std::vector<float> send = gradient;
    feedback.compensate(3, 0, send.data(), n);
    const auto bytes = encode(codec, send);
    feedback.update(3, 0, send.data(), n, codec, bytes.data(), bytes.size());
    const auto decoded = decode(codec, bytes, n);
    for (size_t i = 0; i < n; ++i) {
      inputs[i] += gradient[i];
      decoded_sum[i] += decoded[i];
      max_sent_and_kept = std::max(max_sent_and_kept, std::fabs(double{send[i]}) + std::fabs(double{decoded[i]}));
    }
  }
  const std::vector<float>& residual = *feedback.residual(3, 0);
  const double tolerance = kSteps * std::ldexp(1.0, -23) * max_sent_and_kept;
  for (size_t i = 0; i < n; ++i) EXPECT_NEAR(decoded_sum[i] + residual[i], inputs[i], tolerance) << i;
}

TEST(Compression2BitMagnitude, LargeGradientsDoNotWaitInTheResidual) {
  // Gradients 40x the threshold, the same every step: MXNet's form sends
  // +-t and its residual grows every step (and is warned of); the mean form
  // sends them whole and keeps nothing back, with no warning.
  const std::vector<float> g(64, 20.0f);
  ErrorFeedback mean_feedback, mxnet_feedback;
  const GradientCodec mean(config("2bit:threshold=0.5"));
  const GradientCodec mxnet(config("2bit:threshold=0.5,magnitude=threshold"));
  for (int step = 0; step < 32; ++step) {
    for (auto [codec, feedback] : {std::pair{&mean, &mean_feedback}, std::pair{&mxnet, &mxnet_feedback}}) {
      std::vector<float> send = g;
      feedback->compensate(1, 0, send.data(), send.size());
      const auto bytes = encode(*codec, send);
      feedback->update(1, 0, send.data(), send.size(), *codec, bytes.data(), bytes.size());
    }
  }
  EXPECT_EQ(*mean_feedback.residual(1, 0), std::vector<float>(64, 0.0f));
  EXPECT_EQ((*mxnet_feedback.residual(1, 0))[0], 32 * 19.5f);
  EXPECT_FALSE(mean_feedback.warned());
  EXPECT_TRUE(mxnet_feedback.warned());
}

}  // namespace
}  // namespace dt::ps::compression
