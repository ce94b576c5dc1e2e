// Adam and AdamW against arithmetic written out by hand.
#include "optim/adam.h"

#include <gtest/gtest.h>

#include <cmath>

#include "optim/optimizer.h"
#include "optim_test_util.h"

namespace dt::optim {
namespace {

using testing::f32;
using testing::half_array;
using testing::half_values;
using testing::values_of;

TEST(AdamTest, BiasCorrectionAtSteps1And2) {
  auto opt = Optimizer::create(OptimizerConfig("adam").set("learning_rate", 0.1));
  const core::NDArray w = f32({1.0f, 2.0f});

  // step 1, g = [0.5, -2]:
  //   m = 0.1*g = [0.05, -0.2];  v = 0.001*g^2 = [0.00025, 0.004]
  //   lr_t = 0.1 * sqrt(1 - 0.999) / (1 - 0.9) = sqrt(0.001) = 0.0316227766
  //   m / sqrt(v) = 0.1*g / (sqrt(0.001)*|g|) = +-3.16227766, so each weight moves by exactly lr:
  //   w = [1 - 0.1, 2 + 0.1]
  opt->update(0, w, f32({0.5f, -2.0f}));
  auto got = values_of(w);
  EXPECT_NEAR(got[0], 0.9, 1e-6);
  EXPECT_NEAR(got[1], 2.1, 1e-6);

  // step 2, g = [0.25, -2]:
  //   m = 0.9*[0.05, -0.2] + 0.1*[0.25, -2] = [0.07, -0.38]
  //   v = 0.999*[0.00025, 0.004] + 0.001*[0.0625, 4] = [0.00031225, 0.007996]
  //   lr_t = 0.1 * sqrt(1 - 0.999^2) / (1 - 0.9^2) = 0.1 * sqrt(0.001999) / 0.19 = 0.0235316725
  //   w0 = 0.9 - 0.0235316725 * 0.07 / sqrt(0.00031225) = 0.9 - 0.0235316725 * 3.9613828 = 0.8067821
  //   w1: a constant gradient gives m/sqrt(v) = (1-0.9^2)/sqrt(1-0.999^2), so again exactly lr: 2.2
  opt->update(0, w, f32({0.25f, -2.0f}));
  got = values_of(w);
  EXPECT_NEAR(got[0], 0.8067821, 1e-6);
  EXPECT_NEAR(got[1], 2.2, 1e-6);

  const auto state = opt->state("");
  ASSERT_EQ(state.size(), 5u);
  EXPECT_EQ(state[3].first, "0.mean");
  EXPECT_EQ(state[4].first, "0.var");
  EXPECT_NEAR(values_of(state[3].second)[0], 0.07, 1e-7);
  EXPECT_NEAR(values_of(state[3].second)[1], -0.38, 1e-7);
  EXPECT_NEAR(values_of(state[4].second)[0], 0.00031225, 1e-9);
  EXPECT_NEAR(values_of(state[4].second)[1], 0.007996, 1e-9);
}

TEST(AdamTest, EpsilonAndL2WeightDecay) {
  // A large epsilon makes its place in the rule visible; wd is L2 on the gradient.
  auto opt = Optimizer::create(
      OptimizerConfig("adam").set("learning_rate", 0.1).set("epsilon", 0.1).set("wd", 0.5).set("beta1", 0.5));
  const core::NDArray w = f32({1.0f});
  // step 1: g = 0.1 + 0.5*1 = 0.6;  m = 0.5*0.6 = 0.3;  v = 0.001*0.36 = 0.00036;  sqrt(v) = 0.018973666
  //   lr_t = 0.1 * sqrt(0.001) / 0.5 = 0.0063245553
  //   w = 1 - 0.0063245553 * 0.3 / (0.018973666 + 0.1) = 1 - 0.0159478 = 0.9840522
  opt->update(0, w, f32({0.1f}));
  EXPECT_NEAR(values_of(w)[0], 0.9840522, 1e-6);
}

// Adam+L2 adds wd*w to the gradient, which the adaptive step then normalises
// away; AdamW shrinks each weight by lr*wd*w outside it, in proportion to the
// weight. With a zero gradient the difference is the whole story.
TEST(AdamTest, AdamWDecouplesWeightDecay) {
  const auto with = [](const char* name) {
    return Optimizer::create(OptimizerConfig(name).set("learning_rate", 0.1).set("wd", 0.1));
  };
  auto adam = with("adam");
  auto adamw = with("adamw");
  const core::NDArray w_adam = f32({1.0f, 10.0f});
  const core::NDArray w_adamw = f32({1.0f, 10.0f});
  const core::NDArray zero = f32({0.0f, 0.0f});
  adam->update(0, w_adam, zero);
  adamw->update(0, w_adamw, zero);
  // Adam+L2, step 1: g = 0.1*w = [0.1, 1]; the step is lr*sign(g) whatever w is: [0.9, 9.9]
  EXPECT_NEAR(values_of(w_adam)[0], 0.9, 1e-6);
  EXPECT_NEAR(values_of(w_adam)[1], 9.9, 1e-5);
  // AdamW, step 1: m = v = 0; w = w * (1 - 0.1*0.1) = [0.99, 9.9]
  EXPECT_NEAR(values_of(w_adamw)[0], 0.99, 1e-6);
  EXPECT_NEAR(values_of(w_adamw)[1], 9.9, 1e-5);

  // With a gradient, AdamW is Adam's step plus the decay: g = 0.5 on w = 1:
  // w = 1*(1 - 0.01) - 0.1 (the step-1 Adam move) = 0.89; Adam+L2 moves by 0.1 only.
  auto adam2 = with("adam");
  auto adamw2 = with("adamw");
  const core::NDArray a = f32({1.0f});
  const core::NDArray b = f32({1.0f});
  adam2->update(0, a, f32({0.5f}));
  adamw2->update(0, b, f32({0.5f}));
  EXPECT_NEAR(values_of(a)[0], 0.9, 1e-6);
  EXPECT_NEAR(values_of(b)[0], 0.89, 1e-6);
}

TEST(AdamTest, AdamWDecayFollowsTheSchedule) {
  // lr drops to 0.05 from update 2 on; the decay uses the scheduled lr, the step lr_t too.
  auto opt = Optimizer::create(OptimizerConfig("adamw")
                                   .set("learning_rate", 0.1)
                                   .set("wd", 0.5)
                                   .set("lr_scheduler", "multifactor")
                                   .set("steps", std::vector<int64_t>{1})
                                   .set("factor", 0.5));
  const core::NDArray w = f32({2.0f});
  opt->update(0, w, f32({0.0f}));  // w = 2 * (1 - 0.1*0.5) = 1.9
  EXPECT_NEAR(values_of(w)[0], 1.9, 1e-6);
  opt->update(0, w, f32({0.0f}));  // w = 1.9 * (1 - 0.05*0.5) = 1.8525
  EXPECT_NEAR(values_of(w)[0], 1.8525, 1e-6);
}

TEST(AdamTest, ClipGradientBeforeTheMoments) {
  auto opt = Optimizer::create(OptimizerConfig("adam").set("learning_rate", 0.1).set("clip_gradient", 0.5));
  const core::NDArray w = f32({0.0f});
  opt->update(0, w, f32({4.0f}));
  // g = clip(4) = 0.5: m = 0.05, v = 0.00025
  const auto state = opt->state("");
  EXPECT_NEAR(values_of(state[3].second)[0], 0.05, 1e-8);
  EXPECT_NEAR(values_of(state[4].second)[0], 0.00025, 1e-10);
  EXPECT_NEAR(values_of(w)[0], -0.1, 1e-6);
}

TEST(AdamTest, MultiPrecisionBFloat16) {
  // Adam's first step moves every weight by lr; 1e-3 is below bfloat16's
  // resolution at 1.0, so only the master remembers it.
  auto plain = Optimizer::create(OptimizerConfig("adam").set("learning_rate", 1e-3));
  auto mp = Optimizer::create(OptimizerConfig("adam").set("learning_rate", 1e-3).set("multi_precision", true));
  const core::NDArray w_plain = half_array(core::DType::kBFloat16, {1.0f});
  const core::NDArray w_mp = half_array(core::DType::kBFloat16, {1.0f});
  const core::NDArray g = half_array(core::DType::kBFloat16, {1.0f});
  for (int i = 0; i < 10; ++i) {
    plain->update(0, w_plain, g);
    mp->update(0, w_mp, g);
  }
  EXPECT_EQ(half_values(w_plain)[0], 1.0f);
  // Ten steps of exactly lr on a constant gradient: 1 - 0.01 = 0.99 in the master.
  EXPECT_NEAR(values_of(mp->state("").back().second)[0], 0.99f, 1e-5f);
  EXPECT_NEAR(half_values(w_mp)[0], 0.99f, 4e-3f);
}

}  // namespace
}  // namespace dt::optim
