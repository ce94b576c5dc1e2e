#include "nn/initializer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "layer_test_util.h"

namespace dt::nn {
namespace {

using core::DType;
using core::ErrorCode;
using core::NDArray;
using core::Shape;
using layers::testing::code_of;
using layers::testing::cpu;
using layers::testing::to_vector;

std::vector<float> filled(const Initializer& init, const Shape& shape, uint64_t seed = 42,
                          const std::string& name = "layer.weight") {
  const NDArray a = NDArray::empty(cpu(), DType::kFloat32, shape);
  init.fill(a, seed, name);
  return to_vector(a);
}

Initializer make(Initializer::Kind kind, double value = 0.0, double scale = 1.0, double gain = 1.0) {
  Initializer init;
  init.kind = kind;
  init.value = value;
  init.scale = scale;
  init.gain = gain;
  return init;
}

struct Stats {
  double mean = 0, stddev = 0, min = 0, max = 0;
  double within_one_sigma = 0;  // fraction with |x - mean| < stddev
};

Stats stats_of(const std::vector<float>& v) {
  Stats s;
  double sum = 0, sq = 0;
  for (float x : v) sum += x;
  s.mean = sum / v.size();
  for (float x : v) sq += (x - s.mean) * (x - s.mean);
  s.stddev = std::sqrt(sq / v.size());
  s.min = *std::min_element(v.begin(), v.end());
  s.max = *std::max_element(v.begin(), v.end());
  size_t inside = 0;
  for (float x : v) inside += std::fabs(x - s.mean) < s.stddev;
  s.within_one_sigma = static_cast<double>(inside) / v.size();
  return s;
}

// Tolerances for 100k+ samples: the sample mean's standard error is
// sd / 316, checked within 5 standard errors; the sample standard deviation's
// relative error is ~1 / sqrt(2n) = 0.2 %, checked within 1 %; the fraction
// within one sigma has standard error 0.0015, checked within 0.01. All fail
// for a wrong formula (a missing gain, fan_out for fan_in, a uniform where
// a normal belongs: 0.577 vs 0.683 within one sigma).
void expect_uniform(const std::vector<float>& v, double bound) {
  const Stats s = stats_of(v);
  const double sd = bound / std::sqrt(3.0);
  EXPECT_NEAR(s.mean, 0.0, 5 * sd / std::sqrt(v.size()));
  EXPECT_NEAR(s.stddev, sd, 0.01 * sd);
  EXPECT_GE(s.min, -bound);
  EXPECT_LE(s.max, bound);
  EXPECT_LT(s.min, -0.999 * bound);
  EXPECT_GT(s.max, 0.999 * bound);
  EXPECT_NEAR(s.within_one_sigma, 1.0 / std::sqrt(3.0), 0.01);
}

void expect_normal(const std::vector<float>& v, double sd) {
  const Stats s = stats_of(v);
  EXPECT_NEAR(s.mean, 0.0, 5 * sd / std::sqrt(v.size()));
  EXPECT_NEAR(s.stddev, sd, 0.01 * sd);
  EXPECT_NEAR(s.within_one_sigma, 0.6827, 0.01);
  // Of 100k normals ~23 lie beyond 3.5 sigma on each side (a bounded
  // distribution would have none); beyond 7 sigma, practically never.
  EXPECT_LT(s.max, 7 * sd);
  EXPECT_GT(s.max, 3.5 * sd);
}

TEST(InitializerTest, ReproducibleForSeedAndNameOnly) {
  const Initializer init = make(Initializer::Kind::kNormal);
  const Shape shape({50, 20});
  const auto a = filled(init, shape, 7, "fc1.weight");
  EXPECT_EQ(filled(init, shape, 7, "fc1.weight"), a);
  EXPECT_NE(filled(init, shape, 7, "fc2.weight"), a);
  EXPECT_NE(filled(init, shape, 8, "fc1.weight"), a);
  // The stream does not depend on the shape: a longer array starts alike.
  const auto longer = filled(init, Shape({60, 20}), 7, "fc1.weight");
  EXPECT_TRUE(std::equal(a.begin(), a.end(), longer.begin()));
}

TEST(InitializerTest, ValuesArePinnedAcrossPlatforms) {
  // Computed outside C++ (a Python transcription of the generator: state =
  // splitmix64 output of the seed XOR FNV-1a-64 of the name, then splitmix64
  // steps, u = top 53 bits / 2^53, x = scale * (2u - 1)). A change of the
  // generator would silently change every network's initial weights.
  const auto u = filled(make(Initializer::Kind::kUniform, 0, 1.0), Shape({3}), 0, "w");
  EXPECT_EQ(u, (std::vector<float>{0.435502857f, -0.882108867f, 0.677181065f}));
}

TEST(InitializerTest, ConstantKinds) {
  EXPECT_EQ(filled(make(Initializer::Kind::kZeros), Shape({4})), std::vector<float>(4, 0.0f));
  EXPECT_EQ(filled(make(Initializer::Kind::kOnes), Shape({4})), std::vector<float>(4, 1.0f));
  EXPECT_EQ(filled(make(Initializer::Kind::kConstant, 0.25), Shape({2, 2})), std::vector<float>(4, 0.25f));
}

TEST(InitializerTest, UniformAndNormalStatistics) {
  expect_uniform(filled(make(Initializer::Kind::kUniform, 0, 0.07), Shape({100000})), 0.07);
  expect_normal(filled(make(Initializer::Kind::kNormal, 0, 2.0), Shape({100000})), 2.0);
}

TEST(InitializerTest, XavierUsesPyTorchFansForConvShapes) {
  // (128, 96, 3, 3), 110592 elements: fan_in = 96 * 9 = 864, fan_out = 128 * 9 = 1152.
  const Shape big_conv({128, 96, 3, 3});
  expect_uniform(filled(make(Initializer::Kind::kXavierUniform, 0, 1, 1.0), big_conv),
                 std::sqrt(6.0 / (864.0 + 1152.0)));
  expect_normal(filled(make(Initializer::Kind::kXavierNormal, 0, 1, 2.0), big_conv),
                2.0 * std::sqrt(2.0 / (864.0 + 1152.0)));
  // Dense (out, in) = (200, 500).
  expect_normal(filled(make(Initializer::Kind::kXavierNormal), Shape({200, 500})), std::sqrt(2.0 / 700.0));
}

TEST(InitializerTest, KaimingUsesFanIn) {
  // (256, 48, 3, 3): fan_in = 432, fan_out = 2304; only fan_in counts.
  const Shape conv({256, 48, 3, 3});
  const double gain = std::sqrt(2.0);
  expect_uniform(filled(make(Initializer::Kind::kKaimingUniform, 0, 1, gain), conv), gain * std::sqrt(3.0 / 432.0));
  expect_normal(filled(make(Initializer::Kind::kKaimingNormal, 0, 1, gain), conv), gain / std::sqrt(432.0));
  expect_normal(filled(make(Initializer::Kind::kKaimingNormal), Shape({100, 1000})), 1.0 / std::sqrt(1000.0));
}

TEST(InitializerTest, FanKindsNeedTwoDims) {
  std::string message;
  EXPECT_EQ(code_of([] { filled(make(Initializer::Kind::kXavierUniform), Shape({10})); }, &message),
            ErrorCode::kInvalidArgument);
  EXPECT_NE(message.find("(10,)"), std::string::npos) << message;
  EXPECT_NE(message.find("layer.weight"), std::string::npos) << message;
  // The shape-free kinds fill a bias.
  EXPECT_EQ(filled(make(Initializer::Kind::kUniform), Shape({10})).size(), 10u);
}

TEST(InitializerTest, WrongDtypeIsAnError) {
  const NDArray ints = NDArray::zeros(cpu(), DType::kInt32, Shape({3}));
  EXPECT_EQ(code_of([&] { make(Initializer::Kind::kOnes).fill(ints, 1, "x"); }), ErrorCode::kDtypeMismatch);
}

TEST(InitializerTest, KindNamesRoundTrip) {
  for (auto kind : {Initializer::Kind::kZeros, Initializer::Kind::kOnes, Initializer::Kind::kConstant,
                    Initializer::Kind::kUniform, Initializer::Kind::kNormal, Initializer::Kind::kXavierUniform,
                    Initializer::Kind::kXavierNormal, Initializer::Kind::kKaimingUniform,
                    Initializer::Kind::kKaimingNormal}) {
    EXPECT_EQ(Initializer::kind_from_name(Initializer::kind_name(kind)), kind);
  }
  EXPECT_STREQ(Initializer::kind_name(Initializer::Kind::kKaimingNormal), "kaiming_normal");
  std::string message;
  EXPECT_EQ(code_of([] { Initializer::kind_from_name("he"); }, &message), ErrorCode::kInvalidArgument);
  EXPECT_NE(message.find("xavier_uniform"), std::string::npos) << message;
}

}  // namespace
}  // namespace dt::nn
