#include "ops/cpu/softmax_cross_entropy.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "ops_test_util.h"

namespace dt::ops::cpu {
namespace {

using testing::all_close;
using testing::numeric_gradient;
using testing::random_vector;

double reference_loss(const std::vector<float>& logits, const std::vector<int64_t>& labels,
                      int64_t classes, Reduction reduction) {
  const int64_t N = labels.size();
  double total = 0.0;
  for (int64_t i = 0; i < N; ++i) {
    double m = logits[i * classes];
    for (int64_t j = 0; j < classes; ++j) m = std::max(m, double(logits[i * classes + j]));
    double s = 0.0;
    for (int64_t j = 0; j < classes; ++j) s += std::exp(logits[i * classes + j] - m);
    total += std::log(s) + m - logits[i * classes + labels[i]];
  }
  return reduction == Reduction::kMean ? total / N : total;
}

TEST(SoftmaxCrossEntropyTest, ForwardMatchesReference) {
  const int64_t N = 6, K = 10;
  const auto logits = random_vector(N * K, 1, -5.0f, 5.0f);
  const std::vector<int64_t> labels{0, 9, 3, 3, 7, 1};
  const std::vector<int32_t> labels32(labels.begin(), labels.end());
  for (const auto red : {Reduction::kMean, Reduction::kSum}) {
    SoftmaxCrossEntropy ce(N, K, red);
    const double ref = reference_loss(logits, labels, K, red);
    EXPECT_NEAR(ce.forward(logits.data(), labels.data()), ref, 1e-5 * std::fabs(ref) + 1e-6);
    EXPECT_NEAR(ce.forward(logits.data(), labels32.data()), ref, 1e-5 * std::fabs(ref) + 1e-6);
    for (int64_t i = 0; i < N; ++i) {
      double row = 0.0;
      for (int64_t j = 0; j < K; ++j) row += ce.probabilities()[i * K + j];
      EXPECT_NEAR(row, 1.0, 1e-5);
    }
  }
}

TEST(SoftmaxCrossEntropyTest, StableForExtremeLogits) {
  const std::vector<float> logits{1000.0f, -1000.0f, 0.0f, -1e4f, 1e4f, 3e4f};
  const std::vector<int32_t> labels{1, 0};
  SoftmaxCrossEntropy ce(2, 3, Reduction::kSum);
  const float loss = ce.forward(logits.data(), labels.data());
  // Row 0: 2000 for picking a class 2000 below the max; row 1: 4e4.
  EXPECT_NEAR(loss, 2000.0f + 40000.0f, 1e-2f);
  std::vector<float> d(6);
  ce.backward(d.data());
  for (float v : d) EXPECT_TRUE(std::isfinite(v));
  EXPECT_NEAR(d[0], 1.0f, 1e-6f);
  EXPECT_NEAR(d[1], -1.0f, 1e-6f);
}

TEST(SoftmaxCrossEntropyTest, BackwardMatchesFiniteDifferences) {
  const int64_t N = 5, K = 7;
  const std::vector<int64_t> labels{2, 0, 6, 2, 4};
  for (const auto red : {Reduction::kMean, Reduction::kSum}) {
    SoftmaxCrossEntropy ce(N, K, red);
    auto logits = random_vector(N * K, 3, -2.0f, 2.0f);
    const float dloss = 1.7f;
    ce.forward(logits.data(), labels.data());
    std::vector<float> d(N * K, 9.0f);
    ce.backward(d.data(), dloss);
    auto run = [&] { return std::vector<float>{ce.forward(logits.data(), labels.data())}; };
    EXPECT_TRUE(all_close(d, numeric_gradient(logits, run, {dloss}, 1e-2f), 2e-2, 2e-4));
  }
}

TEST(SoftmaxCrossEntropyTest, RejectsBadLabelsAndOrder) {
  SoftmaxCrossEntropy ce(2, 3);
  std::vector<float> logits(6), d(6);
  EXPECT_THROW(ce.backward(d.data()), std::logic_error);
  const std::vector<int32_t> high{0, 3}, negative{-1, 0};
  EXPECT_THROW(ce.forward(logits.data(), high.data()), std::invalid_argument);
  EXPECT_THROW(ce.forward(logits.data(), negative.data()), std::invalid_argument);
  EXPECT_THROW(SoftmaxCrossEntropy(0, 3), std::invalid_argument);
}

}  // namespace
}  // namespace dt::ops::cpu
