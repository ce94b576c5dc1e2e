// The loss scaler's state machine (GradScaler's): start, backoff on an
// overflow with the step skipped, growth after growth_interval clean steps,
// the tracker reset by an overflow, the disabled scaler, the bounds on the
// scale, resuming from a checkpoint's state, bad options.
#include "nn/loss_scaler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/error.h"
#include "error_code_of.h"

namespace dt::nn {
namespace {

LossScalerOptions small_interval() {
  LossScalerOptions o;
  o.init_scale = 1024.0;
  o.growth_interval = 3;
  return o;
}

TEST(LossScalerTest, DefaultsAreGradScalers) {
  const LossScaler scaler{LossScalerOptions{}};
  EXPECT_TRUE(scaler.enabled());
  EXPECT_EQ(scaler.scale(), 65536.0);
  EXPECT_EQ(scaler.options().growth_factor, 2.0);
  EXPECT_EQ(scaler.options().backoff_factor, 0.5);
  EXPECT_EQ(scaler.options().growth_interval, 2000);
  EXPECT_EQ(scaler.growth_tracker(), 0);
  EXPECT_EQ(scaler.skipped_steps(), 0);
}

TEST(LossScalerTest, OverflowSkipsTheStepAndHalvesTheScale) {
  LossScaler scaler(small_interval());
  EXPECT_FALSE(scaler.update(false));
  EXPECT_EQ(scaler.scale(), 512.0);
  EXPECT_EQ(scaler.skipped_steps(), 1);
  EXPECT_FALSE(scaler.update(false));
  EXPECT_EQ(scaler.scale(), 256.0);
  EXPECT_EQ(scaler.skipped_steps(), 2);
}

TEST(LossScalerTest, GrowsAfterIntervalCleanSteps) {
  LossScaler scaler(small_interval());
  EXPECT_TRUE(scaler.update(true));
  EXPECT_TRUE(scaler.update(true));
  EXPECT_EQ(scaler.scale(), 1024.0);
  EXPECT_EQ(scaler.growth_tracker(), 2);
  EXPECT_TRUE(scaler.update(true));
  EXPECT_EQ(scaler.scale(), 2048.0);
  EXPECT_EQ(scaler.growth_tracker(), 0);
  EXPECT_EQ(scaler.skipped_steps(), 0);
}

TEST(LossScalerTest, OverflowRestartsTheCleanStepCount) {
  LossScaler scaler(small_interval());
  scaler.update(true);
  scaler.update(true);
  scaler.update(false);  // 512, tracker 0
  EXPECT_EQ(scaler.growth_tracker(), 0);
  scaler.update(true);
  scaler.update(true);
  EXPECT_EQ(scaler.scale(), 512.0);
  scaler.update(true);
  EXPECT_EQ(scaler.scale(), 1024.0);
}

TEST(LossScalerTest, DisabledScalerNeverSkips) {
  LossScaler scaler;
  EXPECT_FALSE(scaler.enabled());
  EXPECT_EQ(scaler.scale(), 1.0);
  EXPECT_TRUE(scaler.update(false));
  EXPECT_EQ(scaler.scale(), 1.0);
  EXPECT_EQ(scaler.skipped_steps(), 0);
}

TEST(LossScalerTest, ScaleIsCappedAt2To100) {
  LossScalerOptions o;
  o.init_scale = 0x1.0p100;
  o.growth_interval = 1;
  LossScaler scaler(o);
  scaler.update(true);
  EXPECT_EQ(scaler.scale(), 0x1.0p100);
}

TEST(LossScalerTest, ScaleStaysAtLeast2ToMinus24) {
  LossScalerOptions o;
  o.init_scale = 0x1.0p-23;
  LossScaler scaler(o);
  EXPECT_FALSE(scaler.update(false));
  EXPECT_EQ(scaler.scale(), 0x1.0p-24);
  EXPECT_FALSE(scaler.update(false));
  EXPECT_EQ(scaler.scale(), 0x1.0p-24);
  EXPECT_EQ(scaler.skipped_steps(), 2);
}

TEST(LossScalerTest, RestoreResumesWhereACheckpointLeftOff) {
  LossScaler scaler(small_interval());
  scaler.restore(4096.0, 2, 7);
  EXPECT_EQ(scaler.scale(), 4096.0);
  EXPECT_EQ(scaler.growth_tracker(), 2);
  EXPECT_EQ(scaler.skipped_steps(), 7);
  EXPECT_TRUE(scaler.update(true));  // the third clean step of 3: growth
  EXPECT_EQ(scaler.scale(), 8192.0);
  EXPECT_EQ(scaler.growth_tracker(), 0);
}

TEST(LossScalerTest, RestoreRejectsImpossibleStates) {
  using test_support::code_of;
  LossScaler scaler(small_interval());
  EXPECT_EQ(code_of([&] { scaler.restore(0.0, 0, 0); }), core::ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of([&] { scaler.restore(std::nan(""), 0, 0); }), core::ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of([&] { scaler.restore(0x1.0p101, 0, 0); }), core::ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of([&] { scaler.restore(1024.0, 3, 0); }), core::ErrorCode::kInvalidArgument);  // interval 3
  EXPECT_EQ(code_of([&] { scaler.restore(1024.0, -1, 0); }), core::ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of([&] { scaler.restore(1024.0, 0, -1); }), core::ErrorCode::kInvalidArgument);
  EXPECT_EQ(scaler.scale(), 1024.0);  // nothing changed
  LossScaler disabled;
  EXPECT_EQ(code_of([&] { disabled.restore(1024.0, 0, 0); }), core::ErrorCode::kBadState);
}

TEST(LossScalerTest, RejectsBadOptions) {
  const auto code_of = [](const LossScalerOptions& o) { return test_support::code_of([&] { LossScaler scaler(o); }); };
  LossScalerOptions o;
  o.init_scale = 0.0;
  EXPECT_EQ(code_of(o), core::ErrorCode::kInvalidArgument);
  o.init_scale = 0x1.0p-25;
  EXPECT_EQ(code_of(o), core::ErrorCode::kInvalidArgument);
  o.init_scale = std::numeric_limits<double>::infinity();
  EXPECT_EQ(code_of(o), core::ErrorCode::kInvalidArgument);
  o = LossScalerOptions{};
  o.growth_factor = 1.0;
  EXPECT_EQ(code_of(o), core::ErrorCode::kInvalidArgument);
  o = LossScalerOptions{};
  o.backoff_factor = 1.0;
  EXPECT_EQ(code_of(o), core::ErrorCode::kInvalidArgument);
  o.backoff_factor = 0.0;
  EXPECT_EQ(code_of(o), core::ErrorCode::kInvalidArgument);
  o = LossScalerOptions{};
  o.growth_interval = 0;
  EXPECT_EQ(code_of(o), core::ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace dt::nn
