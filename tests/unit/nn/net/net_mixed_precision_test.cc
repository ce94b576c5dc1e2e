// Mixed precision on the CPU: what a CPU net must refuse (float16 and
// bfloat16 compute are a GPU feature), the dtype and loss-scaler rules that
// hold on any device, and the gradient finiteness check. The GPU behaviour
// is in tests/gpu/gpu_mixed_precision_test.cc.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "nn/model_builders.h"
#include "nn/net.h"
#include "net_test_util.h"

namespace dt::nn {
namespace {

using testing::error_of;

std::unique_ptr<Net> small_mlp() {
  auto net = std::make_unique<Net>(
      build_model_description_from_text("mlp", R"({"input_shape": [4], "hidden": [8], "classes": 3})"),
      core::make_cpu_context());
  net->initialize(3);
  return net;
}

TEST(NetMixedPrecisionTest, Float32IsTheDefault) {
  auto net = small_mlp();
  EXPECT_EQ(net->compute_dtype(), core::DType::kFloat32);
  EXPECT_FALSE(net->loss_scaler().enabled());
  EXPECT_EQ(net->loss_scaler().scale(), 1.0);
}

TEST(NetMixedPrecisionTest, CpuNetRejectsLowPrecisionCompute) {
  auto net = small_mlp();
  for (core::DType dtype : {core::DType::kFloat16, core::DType::kBFloat16}) {
    const auto thrown = error_of([&] { net->set_compute_dtype(dtype); });
    EXPECT_EQ(thrown.code, core::ErrorCode::kNotSupported);
    EXPECT_NE(thrown.message.find("GPU"), std::string::npos) << thrown.message;
    EXPECT_NE(thrown.message.find(core::dtype_name(dtype)), std::string::npos) << thrown.message;
  }
  EXPECT_EQ(net->compute_dtype(), core::DType::kFloat32);
  net->set_compute_dtype(core::DType::kFloat32);  // a no-op, allowed
}

TEST(NetMixedPrecisionTest, RejectsNonFloatComputeDtypes) {
  auto net = small_mlp();
  for (core::DType dtype : {core::DType::kFloat64, core::DType::kInt32, core::DType::kUInt8}) {
    EXPECT_EQ(error_of([&] { net->set_compute_dtype(dtype); }).code, core::ErrorCode::kInvalidArgument);
  }
}

TEST(NetMixedPrecisionTest, ComputeDtypeIsFixedByTheFirstForward) {
  auto net = small_mlp();
  net->forward({testing::random_array(net->context(), core::Shape{2, 4}, 1)}, false);
  const auto thrown = error_of([&] { net->set_compute_dtype(core::DType::kFloat32); });
  EXPECT_EQ(thrown.code, core::ErrorCode::kBadState);
  EXPECT_NE(thrown.message.find("before the first forward"), std::string::npos) << thrown.message;
}

TEST(NetMixedPrecisionTest, LossScalingNeedsLowPrecision) {
  auto net = small_mlp();
  EXPECT_EQ(error_of([&] { net->set_loss_scaler(LossScaler(LossScalerOptions{})); }).code,
            core::ErrorCode::kInvalidArgument);
  net->set_loss_scaler(LossScaler());  // disabled: fine
}

TEST(NetMixedPrecisionTest, GradientsFiniteSeesInfAndNaN) {
  auto net = small_mlp();
  net->forward({testing::random_array(net->context(), core::Shape{5, 4}, 2)}, true);
  net->backward(testing::labels_array(net->context(), {0, 1, 2, 0, 1}));
  EXPECT_TRUE(net->gradients_finite());

  Parameter& last = net->parameters().back();
  float* g = last.grad.data_as<float>();
  const float kept = g[0];
  g[0] = std::numeric_limits<float>::infinity();
  EXPECT_FALSE(net->gradients_finite());
  g[0] = std::nanf("");
  EXPECT_FALSE(net->gradients_finite());
  // A frozen parameter's gradient is not the step's business.
  last.grad_req = GradReq::kNull;
  EXPECT_TRUE(net->gradients_finite());
  last.grad_req = GradReq::kWrite;
  g[0] = kept;
  EXPECT_TRUE(net->gradients_finite());
}

}  // namespace
}  // namespace dt::nn
