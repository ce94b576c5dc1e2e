#include "nn/mixed_precision_policy.h"

#include <gtest/gtest.h>

#include <optional>

#include "core/error.h"

namespace dt::nn {
namespace {

template <typename F>
std::optional<core::ErrorCode> code_of(F&& fn) {
  try {
    fn();
  } catch (const core::Error& e) {
    return e.code();
  }
  return std::nullopt;
}

TEST(MixedPrecisionPolicy, ChecksTheComputeDtypeAndWhereItRuns) {
  EXPECT_EQ(code_of([] { MixedPrecisionPolicy::check_compute_dtype(core::DType::kInt32); }),
            core::ErrorCode::kInvalidArgument);
  for (core::DType dtype : {core::DType::kFloat32, core::DType::kFloat16, core::DType::kBFloat16}) {
    EXPECT_EQ(code_of([&] { MixedPrecisionPolicy::check_compute_dtype(dtype); }), std::nullopt);
  }
  const auto cpu = core::make_cpu_context();
  EXPECT_EQ(code_of([&] { MixedPrecisionPolicy::check_supported_on(core::DType::kFloat32, *cpu); }), std::nullopt);
  EXPECT_EQ(code_of([&] { MixedPrecisionPolicy::check_supported_on(core::DType::kFloat16, *cpu); }),
            core::ErrorCode::kNotSupported);
  EXPECT_EQ(code_of([&] { MixedPrecisionPolicy::check_supported_on(core::DType::kBFloat16, *cpu); }),
            core::ErrorCode::kNotSupported);
}

TEST(MixedPrecisionPolicy, ScalesTheLossForFloat16Only) {
  MixedPrecisionPolicy policy;
  EXPECT_FALSE(policy.mixed());
  EXPECT_FALSE(policy.loss_scaler().enabled());
  EXPECT_EQ(code_of([&] { policy.set_loss_scaler(LossScaler(LossScalerOptions{})); }),
            core::ErrorCode::kInvalidArgument);
  policy.set_compute_dtype(core::DType::kFloat16);
  EXPECT_TRUE(policy.mixed());
  EXPECT_TRUE(policy.loss_scaler().enabled());
  EXPECT_EQ(policy.loss_scaler().scale(), 65536.0);
  policy.set_compute_dtype(core::DType::kBFloat16);
  EXPECT_FALSE(policy.loss_scaler().enabled());
  policy.set_loss_scaler(LossScaler(LossScalerOptions{}));  // allowed on bfloat16
  EXPECT_TRUE(policy.loss_scaler().enabled());
}

TEST(MixedPrecisionPolicy, SkipsTheUpdateOfAnOverflowedStep) {
  MixedPrecisionPolicy policy;
  bool asked = false;
  EXPECT_TRUE(policy.apply_update([&] {
    asked = true;
    return false;
  }));
  EXPECT_FALSE(asked) << "without loss scaling the gradients need no check";
  policy.set_compute_dtype(core::DType::kFloat16);
  EXPECT_TRUE(policy.apply_update([] { return true; }));
  EXPECT_FALSE(policy.apply_update([] { return false; }));
  EXPECT_EQ(policy.loss_scaler().skipped_steps(), 1);
  EXPECT_EQ(policy.loss_scaler().scale(), 32768.0);
}

TEST(MixedPrecisionPolicy, MovesADefaultStoreUpdateToTheWorkersUnderLossScaling) {
  MixedPrecisionPolicy policy;
  EXPECT_TRUE(policy.update_on_store_allowed(true, false, false));
  EXPECT_FALSE(policy.update_on_store_allowed(false, true, false));
  policy.set_compute_dtype(core::DType::kFloat16);
  EXPECT_FALSE(policy.update_on_store_allowed(false, false, false));
  EXPECT_FALSE(policy.update_on_store_allowed(true, true, false));
  EXPECT_EQ(code_of([&] { policy.update_on_store_allowed(true, false, false); }), core::ErrorCode::kNotSupported);
  EXPECT_EQ(code_of([&] { policy.update_on_store_allowed(true, true, true); }), core::ErrorCode::kNotSupported);
}

}  // namespace
}  // namespace dt::nn
