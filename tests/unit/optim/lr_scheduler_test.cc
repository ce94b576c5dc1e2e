// Schedules at chosen update numbers, alone and driving an optimizer.
#include "optim/lr_scheduler.h"

#include <gtest/gtest.h>

#include <cmath>

#include "optim/optimizer.h"
#include "optim_test_util.h"

namespace dt::optim {
namespace {

using testing::f32;
using testing::values_of;

LrScheduler schedule(const OptimizerConfig& config) {
  config.validate();
  return LrScheduler(config);
}

TEST(LrScheduleTest, NoneIsTheBaseRate) {
  const auto s = schedule(OptimizerConfig("sgd"));
  EXPECT_EQ(s.rate(0, 0.3), 0.3);
  EXPECT_EQ(s.rate(1000000, 0.3), 0.3);
}

TEST(LrScheduleTest, FactorDecaysEveryStepUpdates) {
  const auto s = schedule(
      OptimizerConfig("sgd").set("lr_scheduler", "factor").set("step", 10).set("factor", 0.5));
  // MXNet: decays once num_update exceeds count + step, so updates 1..10 use the base.
  EXPECT_DOUBLE_EQ(s.rate(0, 1.0), 1.0);
  EXPECT_DOUBLE_EQ(s.rate(1, 1.0), 1.0);
  EXPECT_DOUBLE_EQ(s.rate(10, 1.0), 1.0);
  EXPECT_DOUBLE_EQ(s.rate(11, 1.0), 0.5);
  EXPECT_DOUBLE_EQ(s.rate(20, 1.0), 0.5);
  EXPECT_DOUBLE_EQ(s.rate(21, 1.0), 0.25);
  EXPECT_DOUBLE_EQ(s.rate(31, 1.0), 0.125);
}

TEST(LrScheduleTest, FactorStopsAtStopFactorLr) {
  const auto s = schedule(OptimizerConfig("sgd")
                              .set("lr_scheduler", "factor")
                              .set("step", 10)
                              .set("factor", 0.5)
                              .set("stop_factor_lr", 0.3));
  EXPECT_DOUBLE_EQ(s.rate(11, 1.0), 0.5);
  EXPECT_DOUBLE_EQ(s.rate(21, 1.0), 0.3);  // 0.25 is below the floor
  EXPECT_DOUBLE_EQ(s.rate(1000, 1.0), 0.3);
}

TEST(LrScheduleTest, MultiFactorDecaysAfterEachListedStep) {
  const auto s = schedule(OptimizerConfig("sgd")
                              .set("lr_scheduler", "multifactor")
                              .set("steps", std::vector<int64_t>{5, 8})
                              .set("factor", 0.1));
  EXPECT_DOUBLE_EQ(s.rate(5, 1.0), 1.0);
  EXPECT_DOUBLE_EQ(s.rate(6, 1.0), 0.1);
  EXPECT_DOUBLE_EQ(s.rate(8, 1.0), 0.1);
  EXPECT_NEAR(s.rate(9, 1.0), 0.01, 1e-15);
  EXPECT_NEAR(s.rate(500, 1.0), 0.01, 1e-15);
}

TEST(LrScheduleTest, CosineFromBaseToFinal) {
  const auto s = schedule(
      OptimizerConfig("adam").set("lr_scheduler", "cosine").set("max_update", 100).set("final_lr", 0.1));
  // final + (base - final) * (1 + cos(pi * n / 100)) / 2, base 1.1 so that base - final = 1
  EXPECT_DOUBLE_EQ(s.rate(0, 1.1), 1.1);
  EXPECT_NEAR(s.rate(25, 1.1), 0.1 + (1 + std::sqrt(0.5)) / 2, 1e-12);  // cos(pi/4) = sqrt(1/2)
  EXPECT_NEAR(s.rate(50, 1.1), 0.6, 1e-12);
  EXPECT_NEAR(s.rate(100, 1.1), 0.1, 1e-12);
  EXPECT_DOUBLE_EQ(s.rate(150, 1.1), 0.1);
}

TEST(LrScheduleTest, CosineWithLinearWarmup) {
  const auto s = schedule(OptimizerConfig("sgd")
                              .set("lr_scheduler", "cosine")
                              .set("max_update", 100)
                              .set("warmup_steps", 10)
                              .set("warmup_begin_lr", 0.2));
  // warm-up: 0.2 + (1 - 0.2) * n / 10
  EXPECT_DOUBLE_EQ(s.rate(0, 1.0), 0.2);
  EXPECT_NEAR(s.rate(5, 1.0), 0.6, 1e-12);
  EXPECT_NEAR(s.rate(9, 1.0), 0.92, 1e-12);
  // then cosine over the remaining 90 updates: progress (n - 10) / 90
  EXPECT_DOUBLE_EQ(s.rate(10, 1.0), 1.0);
  EXPECT_NEAR(s.rate(55, 1.0), 0.5, 1e-12);
  EXPECT_NEAR(s.rate(100, 1.0), 0.0, 1e-12);
}

TEST(LrScheduleTest, PolyDecay) {
  const auto s = schedule(OptimizerConfig("sgd").set("lr_scheduler", "poly").set("max_update", 100));
  // (1 - n/100)^2
  EXPECT_DOUBLE_EQ(s.rate(0, 1.0), 1.0);
  EXPECT_NEAR(s.rate(50, 1.0), 0.25, 1e-12);
  EXPECT_NEAR(s.rate(90, 1.0), 0.01, 1e-12);
  EXPECT_DOUBLE_EQ(s.rate(101, 1.0), 0.0);
  const auto linear = schedule(
      OptimizerConfig("sgd").set("lr_scheduler", "poly").set("max_update", 100).set("power", 1.0));
  EXPECT_NEAR(linear.rate(30, 2.0), 1.4, 1e-12);
}

TEST(LrScheduleTest, FactorCountsWarmupUpdatesAsMxnetDoes) {
  const auto s = schedule(OptimizerConfig("sgd")
                              .set("lr_scheduler", "factor")
                              .set("step", 10)
                              .set("factor", 0.5)
                              .set("warmup_steps", 4)
                              .set("warmup_begin_lr", 0.2));
  EXPECT_NEAR(s.rate(2, 1.0), 0.6, 1e-12);  // 0.2 + 0.8 * 2/4
  EXPECT_DOUBLE_EQ(s.rate(4, 1.0), 1.0);
  EXPECT_DOUBLE_EQ(s.rate(11, 1.0), 0.5);  // the decay counts from update 0, not from the warm-up's end
}

TEST(LrScheduleTest, WarmupWithoutScheduler) {
  const auto s = schedule(OptimizerConfig("sgd").set("warmup_steps", 4));
  EXPECT_DOUBLE_EQ(s.rate(1, 2.0), 0.5);
  EXPECT_DOUBLE_EQ(s.rate(4, 2.0), 2.0);
}

TEST(LrScheduleTest, OptimizerRunsTheScheduleOnMaxCountOverKeys) {
  auto opt = Optimizer::create(OptimizerConfig("sgd")
                                   .set("learning_rate", 1.0)
                                   .set("lr_scheduler", "multifactor")
                                   .set("steps", std::vector<int64_t>{2})
                                   .set("factor", 0.5));
  EXPECT_DOUBLE_EQ(opt->learning_rate(), 1.0);
  const core::NDArray a = f32({0.0f});
  const core::NDArray b = f32({0.0f});
  const core::NDArray one = f32({1.0f});
  opt->update(1, a, one);  // num_update 1, lr 1:   a = -1
  opt->update(1, a, one);  // num_update 2, lr 1:   a = -2
  opt->update(1, a, one);  // num_update 3, lr 0.5: a = -2.5
  EXPECT_FLOAT_EQ(values_of(a)[0], -2.5f);
  // Key 2's first update runs at num_update = max(3, 1) = 3, lr 0.5, as MXNet's.
  opt->update(2, b, one);
  EXPECT_FLOAT_EQ(values_of(b)[0], -0.5f);
  EXPECT_EQ(opt->num_update(), 3);
  EXPECT_EQ(opt->update_count(2), 1);
  EXPECT_DOUBLE_EQ(opt->learning_rate(), 0.5);

  // A new base lr keeps the schedule's factor.
  opt->set_learning_rate(4.0);
  EXPECT_DOUBLE_EQ(opt->base_learning_rate(), 4.0);
  EXPECT_DOUBLE_EQ(opt->learning_rate(), 2.0);
  opt->update(1, a, one);  // lr 2: a = -4.5
  EXPECT_FLOAT_EQ(values_of(a)[0], -4.5f);
}

}  // namespace
}  // namespace dt::optim
