// ResNet-18 from the model zoo on Fashion-MNIST's one-channel 28x28 images,
// as train_fashion_mnist --model resnet18 builds it: only the stem's weight
// changes with the input channels, and 28x28 passes the stride-2 stages
// (28, 14, 7, 4) to global pooling.
#include <gtest/gtest.h>

#include <cmath>

#include "nn/model_builders.h"
#include "nn/net.h"
#include "ops/tensor_math.h"
#include "net_test_util.h"

namespace dt::nn {
namespace {

using core::Shape;
using testing::labels_array;
using testing::random_array;

size_t learnable_elements(const Net& net) {
  size_t count = 0;
  for (const auto& p : net.parameters()) {
    if (!p.auxiliary) count += static_cast<size_t>(p.value.shape().numel());
  }
  return count;
}

TEST(OneChannelResNet18, StemReadsOneChannelAndOneStepLowersTheLoss) {
  auto ctx = core::make_cpu_context();
  ctx->set_num_threads(1);
  Net net(build_model_description_from_text("resnet18", R"({"input_shape": [1, 28, 28]})"), ctx);
  EXPECT_EQ(net.parameters()[net.param_index("conv1.weight")].value.shape(), (Shape{64, 1, 3, 3}));
  // The 3-channel count less the stem's two missing input channels (64 x 2 x 3 x 3).
  EXPECT_EQ(learnable_elements(net), 11173962u - 64u * 2u * 9u);
  EXPECT_EQ(net.parameters()[net.param_index("fc.weight")].value.shape(), (Shape{10, 512}));

  net.initialize(5);
  const auto x = random_array(ctx, Shape{2, 1, 28, 28}, 11);
  const auto labels = labels_array(ctx, {3, 8});
  net.forward({x}, true);
  EXPECT_EQ(net.output(0).shape(), (Shape{2, 10}));
  const double before = net.backward(labels);
  ASSERT_TRUE(std::isfinite(before));
  for (Parameter& p : net.parameters()) {
    if (!p.auxiliary) ops::axpy(p.value, -0.01, p.grad);
  }
  net.forward({x}, true);
  EXPECT_LT(net.backward(labels), before) << "one SGD step on a batch lowers that batch's loss";
}

TEST(OneChannelResNet18, ThreeChannelInputIsRefusedByTheOneChannelNet) {
  auto ctx = core::make_cpu_context();
  Net net(build_model_description_from_text("resnet18", R"({"input_shape": [1, 28, 28]})"), ctx);
  net.initialize(5);
  const auto e = testing::error_of([&] { net.forward({random_array(ctx, Shape{2, 3, 28, 28}, 11)}, false); });
  EXPECT_EQ(e.code, core::ErrorCode::kShapeMismatch) << e.message;
  EXPECT_NE(e.message.find("expected (batch, 1, 28, 28)"), std::string::npos) << e.message;
}

}  // namespace
}  // namespace dt::nn
