// SGD rules against arithmetic written out by hand, step by step.
#include "optim/sgd.h"

#include <gtest/gtest.h>

#include <cmath>
#include <optional>

#include "optim/optimizer.h"
#include "optim_test_util.h"

namespace dt::optim {
namespace {

using testing::f32;
using testing::half_array;
using testing::half_values;
using testing::values_of;

constexpr float kTol = 1e-6f;

void expect_near(const std::vector<float>& actual, const std::vector<double>& expected, float tol = kTol) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) EXPECT_NEAR(actual[i], expected[i], tol) << "element " << i;
}

TEST(SgdTest, PlainStepsDownTheGradient) {
  auto opt = Optimizer::create(OptimizerConfig("sgd").set("learning_rate", 0.1));
  const core::NDArray w = f32({1.0f, -2.0f, 0.5f});
  const core::NDArray g = f32({0.5f, 1.0f, -4.0f});
  // step 1: w - 0.1 * g = [1 - 0.05, -2 - 0.1, 0.5 + 0.4]
  opt->update(3, w, g);
  expect_near(values_of(w), {0.95, -2.1, 0.9});
  // step 2: [0.95 - 0.05, -2.1 - 0.1, 0.9 + 0.4]
  opt->update(3, w, g);
  expect_near(values_of(w), {0.9, -2.2, 1.3});
  EXPECT_EQ(opt->update_count(3), 2);
  EXPECT_EQ(opt->num_update(), 2);
  // Plain SGD keeps no per-key arrays: only the counters are state.
  const auto state = opt->state("opt.");
  ASSERT_EQ(state.size(), 3u);
  EXPECT_EQ(state[2].first, "opt.3.step");
}

TEST(SgdTest, MomentumFollowsMxnetVelocity) {
  auto opt = Optimizer::create(OptimizerConfig("sgd").set("learning_rate", 0.1).set("momentum", 0.9));
  const core::NDArray w = f32({1.0f, -2.0f});
  const core::NDArray g = f32({0.5f, 1.0f});
  // step 1: mom = 0.9*0 - 0.1*[0.5, 1] = [-0.05, -0.1];  w = [0.95, -2.1]
  opt->update(0, w, g);
  expect_near(values_of(w), {0.95, -2.1});
  // step 2: mom = 0.9*[-0.05, -0.1] - [0.05, 0.1] = [-0.095, -0.19];  w = [0.855, -2.29]
  opt->update(0, w, g);
  expect_near(values_of(w), {0.855, -2.29});
  // step 3: mom = 0.9*[-0.095, -0.19] - [0.05, 0.1] = [-0.1355, -0.271];  w = [0.7195, -2.561]
  opt->update(0, w, g);
  expect_near(values_of(w), {0.7195, -2.561});
  const auto state = opt->state("");
  ASSERT_EQ(state.size(), 4u);
  EXPECT_EQ(state[3].first, "0.mom");
  expect_near(values_of(state[3].second), {-0.1355, -0.271});
}

TEST(SgdTest, NesterovMatchesNagByHand) {
  // The same rule by name and by flag.
  for (const OptimizerConfig& config :
       {OptimizerConfig("nag").set("learning_rate", 0.1),
        OptimizerConfig("sgd").set("learning_rate", 0.1).set("momentum", 0.9).set("nesterov", true)}) {
    auto opt = Optimizer::create(config);
    const core::NDArray w = f32({1.0f});
    const core::NDArray g = f32({0.5f});
    // step 1: mom = 0.9*0 + 0.5 = 0.5;       w = 1 - 0.1*(0.5 + 0.9*0.5) = 1 - 0.095 = 0.905
    opt->update(1, w, g);
    expect_near(values_of(w), {0.905});
    // step 2: mom = 0.9*0.5 + 0.5 = 0.95;    w = 0.905 - 0.1*(0.5 + 0.855) = 0.7695
    opt->update(1, w, g);
    expect_near(values_of(w), {0.7695});
    // step 3: mom = 0.9*0.95 + 0.5 = 1.355;  w = 0.7695 - 0.1*(0.5 + 1.2195) = 0.59755
    opt->update(1, w, g);
    expect_near(values_of(w), {0.59755});
  }
}

TEST(SgdTest, WeightDecayIsAddedToTheGradient) {
  auto opt = Optimizer::create(OptimizerConfig("sgd").set("learning_rate", 0.1).set("wd", 0.01));
  const core::NDArray w = f32({2.0f, 0.0f});
  const core::NDArray g = f32({0.5f, 0.5f});
  // step 1: g' = 0.5 + 0.01*2 = 0.52;          w = 2 - 0.052 = 1.948   (second: 0 - 0.05)
  opt->update(0, w, g);
  expect_near(values_of(w), {1.948, -0.05});
  // step 2: g' = 0.5 + 0.01*1.948 = 0.51948;   w = 1.948 - 0.051948 = 1.896052
  //         second: g' = 0.5 - 0.0005 = 0.4995; w = -0.05 - 0.04995 = -0.09995
  opt->update(0, w, g);
  expect_near(values_of(w), {1.896052, -0.09995});
}

TEST(SgdTest, RescaleGradFromConfigAndSetter) {
  auto opt = Optimizer::create(OptimizerConfig("sgd").set("learning_rate", 0.1).set("rescale_grad", 0.25));
  const core::NDArray w = f32({0.0f, 0.0f});
  const core::NDArray g = f32({4.0f, -8.0f});
  // step 1: g' = 0.25*[4, -8] = [1, -2];  w = [-0.1, 0.2]
  opt->update(0, w, g);
  expect_near(values_of(w), {-0.1, 0.2});
  // step 2: g' = 0.5*[4, -8] = [2, -4];   w = [-0.1 - 0.2, 0.2 + 0.4]
  opt->set_rescale_grad(0.5);
  EXPECT_EQ(opt->rescale_grad(), 0.5);
  opt->update(0, w, g);
  expect_near(values_of(w), {-0.3, 0.6});
}

// A server applies a dist_sync round with the numbers worker 0 pushed it
// with: they count for that update alone.
TEST(SgdTest, NumbersForOneUpdateLeaveTheSettingsAsTheyAre) {
  auto opt = Optimizer::create(OptimizerConfig("sgd").set("learning_rate", 0.1).set("rescale_grad", 0.25));
  const core::NDArray w = f32({0.0f, 0.0f});
  const core::NDArray g = f32({4.0f, -8.0f});
  // step 1 with lr 0.5, rescale 0.5: g' = [2, -4];  w = [-1, 2]
  opt->update(0, w, g, UpdateNumbers{0.5, 0.5});
  expect_near(values_of(w), {-1.0, 2.0});
  EXPECT_EQ(opt->base_learning_rate(), 0.1);
  EXPECT_EQ(opt->rescale_grad(), 0.25);
  // step 2 with the rescale alone: g' = [1, -2] * 2 = [2, -4] * 0.1;  w = [-1.2, 2.4]
  opt->update(0, w, g, UpdateNumbers{std::nullopt, 0.5});
  expect_near(values_of(w), {-1.2, 2.4});
  // step 3 with its own: g' = [1, -2];  w = [-1.3, 2.6]
  opt->update(0, w, g);
  expect_near(values_of(w), {-1.3, 2.6});
  EXPECT_EQ(opt->update_count(0), 3);
  // Numbers the setters refuse are refused, and nothing changes.
  for (const UpdateNumbers& bad : {UpdateNumbers{-1.0, std::nullopt}, UpdateNumbers{std::nullopt, 0.0},
                                   UpdateNumbers{std::nullopt, std::nan("")}}) {
    try {
      opt->update(0, w, g, bad);
      ADD_FAILURE() << "bad numbers were taken";
    } catch (const core::Error& e) {
      EXPECT_EQ(e.code(), core::ErrorCode::kInvalidArgument);
    }
  }
  expect_near(values_of(w), {-1.3, 2.6});
  EXPECT_EQ(opt->update_count(0), 3);
}

TEST(SgdTest, ClipGradientClipsTheRescaledGradientBeforeWeightDecay) {
  const auto base = OptimizerConfig("sgd").set("learning_rate", 0.1).set("rescale_grad", 2.0).set("wd", 0.1);
  {
    auto opt = Optimizer::create(OptimizerConfig(base).set("clip_gradient", 1.0));
    const core::NDArray w = f32({1.0f, 1.0f, 1.0f});
    // rescaled [0.5, 6, -6] -> clipped [0.5, 1, -1] -> + 0.1*1 = [0.6, 1.1, -0.9]
    // w = [1 - 0.06, 1 - 0.11, 1 + 0.09]. (Clipping after the decay would give 0.9 and 1.1.)
    opt->update(0, w, f32({0.25f, 3.0f, -3.0f}));
    expect_near(values_of(w), {0.94, 0.89, 1.09});
  }
  for (double off : {0.0, -1.0}) {
    auto opt = Optimizer::create(OptimizerConfig(base).set("clip_gradient", off));
    const core::NDArray w = f32({1.0f, 1.0f});
    // No clipping: g' = [6 + 0.1, -6 + 0.1];  w = [1 - 0.61, 1 + 0.59]
    opt->update(0, w, f32({3.0f, -3.0f}));
    expect_near(values_of(w), {0.39, 1.59});
  }
}

TEST(SgdTest, MomentumAndClipTogetherInOnePass) {
  auto opt = Optimizer::create(
      OptimizerConfig("sgd").set("learning_rate", 0.5).set("momentum", 0.5).set("clip_gradient", 0.5));
  const core::NDArray w = f32({0.0f});
  // step 1: g = clip(2) = 0.5;  mom = -0.25;                 w = -0.25
  opt->update(0, w, f32({2.0f}));
  expect_near(values_of(w), {-0.25});
  // step 2: g = clip(-3) = -0.5; mom = 0.5*-0.25 + 0.25 = 0.125;  w = -0.125
  opt->update(0, w, f32({-3.0f}));
  expect_near(values_of(w), {-0.125});
}

TEST(SgdTest, Float64WeightsComputeInDouble) {
  auto opt = Optimizer::create(OptimizerConfig("sgd").set("learning_rate", 0.1).set("momentum", 0.9));
  const auto cpu = core::make_cpu_context();
  core::NDArray w = core::NDArray::empty(cpu, core::DType::kFloat64, core::Shape({1}));
  core::NDArray g = core::NDArray::empty(cpu, core::DType::kFloat64, core::Shape({1}));
  const double one = 1.0, half = 0.5;
  w.copy_from_host(&one, sizeof one);
  g.copy_from_host(&half, sizeof half);
  opt->update(0, w, g);
  opt->update(0, w, g);
  // As MomentumFollowsMxnetVelocity, step 2: 0.855, to double precision.
  EXPECT_NEAR(w.data_as<double>()[0], 0.855, 1e-15);
  EXPECT_EQ(opt->state("")[3].second.dtype(), core::DType::kFloat64);
}

// weight 1.0 and lr * grad = 1e-4, 100 times: float16's spacing just below
// 1.0 is 2^-11 ~ 4.9e-4, so 1 - 1e-4 rounds back to 1 every time unless a
// float32 master copy accumulates the steps.
TEST(SgdTest, MultiPrecisionKeepsUpdatesThat16BitsLose) {
  for (core::DType dtype : {core::DType::kFloat16, core::DType::kBFloat16}) {
    auto plain = Optimizer::create(OptimizerConfig("sgd").set("learning_rate", 1e-4));
    auto mp = Optimizer::create(OptimizerConfig("sgd").set("learning_rate", 1e-4).set("multi_precision", true));
    const core::NDArray w_plain = half_array(dtype, {1.0f});
    const core::NDArray w_mp = half_array(dtype, {1.0f});
    const core::NDArray g = half_array(dtype, {1.0f});
    for (int i = 0; i < 100; ++i) {
      plain->update(0, w_plain, g);
      mp->update(0, w_mp, g);
    }
    EXPECT_EQ(half_values(w_plain)[0], 1.0f) << core::dtype_name(dtype);
    // 1 - 100 * 1e-4 = 0.99 in the master; the weight is its rounding
    // (float16 0.990234375, bfloat16 0.98828125).
    const auto state = mp->state("");
    ASSERT_EQ(state.back().first, "0.weight32");
    EXPECT_NEAR(values_of(state.back().second)[0], 0.99f, 1e-5f);
    EXPECT_NEAR(half_values(w_mp)[0], 0.99f, dtype == core::DType::kFloat16 ? 5e-4f : 4e-3f);
    EXPECT_LT(half_values(w_mp)[0], 1.0f);
  }
}

TEST(SgdTest, MultiPrecisionIsANoOpForFloat32) {
  auto opt = Optimizer::create(OptimizerConfig("sgd").set("learning_rate", 0.1).set("multi_precision", true));
  const core::NDArray w = f32({1.0f});
  opt->update(0, w, f32({1.0f}));
  expect_near(values_of(w), {0.9});
  EXPECT_EQ(opt->state("").size(), 3u);  // num_update, learning_rate, 0.step: no master
}

TEST(SgdTest, HalfWithoutMultiPrecisionComputesInFloat32AndRounds) {
  auto opt = Optimizer::create(OptimizerConfig("sgd").set("learning_rate", 0.5).set("momentum", 0.5));
  const core::NDArray w = half_array(core::DType::kFloat16, {1.0f, 2.0f});
  const core::NDArray g = half_array(core::DType::kFloat16, {0.5f, -1.0f});
  // mom = -0.5*g = [-0.25, 0.5]; w = [0.75, 2.5], both exact in float16.
  opt->update(0, w, g);
  EXPECT_EQ(half_values(w), (std::vector<float>{0.75f, 2.5f}));
  // Moments stay float32 even for 16-bit weights.
  EXPECT_EQ(opt->state("")[3].second.dtype(), core::DType::kFloat32);
}

}  // namespace
}  // namespace dt::optim
