// Error feedback's bookkeeping for gradient compression: the residual
// carries what was not sent, parts are independent and thread-safe, and
// bytes that do not decode restart the residual.
#include <gtest/gtest.h>

#include "compression_test_util.h"

namespace dt::ps::compression {
namespace {

using namespace compression_test;

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
