// A net whose 4-d part runs in NHWC (nn/net_layout.h, DT_CONV_LAYOUT): the
// rewritten description converts once at the input and once before the
// first flattening layer (none after global pooling), keeps every parameter
// as it was, and trains to the same parameters as the NCHW net, within float
// rounding, for a conv-BN-ReLU-pool-dense net and a residual block.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/context.h"
#include "nn/net.h"
#include "nn/net_description.h"
#include "nn/net_layout.h"
#include "ops/tensor_math.h"
#include "layout_test_nets.h"
#include "net_test_util.h"
#include "unit/ops/ops_test_util.h"

namespace dt::nn {
namespace {

using ops::TensorLayout;
using testing::conv_bn_pool_dense;
using testing::residual_block;

std::vector<std::string> converters(const NetDescription& d) {
  std::vector<std::string> names;
  for (const LayerSpec& spec : d.layers) {
    if (spec.type == "LayoutConvert") names.push_back(spec.name + ":" + spec.inputs.at(0));
  }
  return names;
}

// Trains both nets the same steps from the same weights; their parameters
// (running statistics included) and losses must agree.
void expect_same_training(const NetDescription& description, const core::Shape& sample, int64_t classes) {
  auto ctx = core::make_cpu_context();
  Net nchw(description, ctx);
  Net nhwc(with_activation_layout(description, TensorLayout::kNHWC), ctx);
  ASSERT_EQ(nchw.parameters().size(), nhwc.parameters().size());
  for (size_t i = 0; i < nchw.parameters().size(); ++i) {
    ASSERT_EQ(nchw.parameters()[i].name, nhwc.parameters()[i].name);
    ASSERT_EQ(nchw.parameters()[i].value.shape(), nhwc.parameters()[i].value.shape());
  }
  nchw.initialize(38);
  nhwc.initialize(38);
  const int64_t batch = 6;
  std::vector<int64_t> dims{batch};
  for (size_t i = 0; i < sample.ndim(); ++i) dims.push_back(sample[i]);
  for (int step = 0; step < 4; ++step) {
    const core::NDArray x = testing::random_array(ctx, core::Shape(dims), 100 + step);
    std::vector<int32_t> labels;
    for (int64_t i = 0; i < batch; ++i) labels.push_back(static_cast<int32_t>((i + step) % classes));
    const core::NDArray y = testing::labels_array(ctx, labels);
    double losses[2];
    Net* nets[2] = {&nchw, &nhwc};
    for (int k = 0; k < 2; ++k) {
      nets[k]->forward({x}, true);
      losses[k] = nets[k]->backward(y);
      for (Parameter& p : nets[k]->parameters()) {
        if (!p.auxiliary) ops::axpy(p.value, -0.1, p.grad);
      }
    }
    EXPECT_NEAR(losses[1], losses[0], 1e-5 * (1 + losses[0])) << "step " << step;
  }
  for (size_t i = 0; i < nchw.parameters().size(); ++i) {
    EXPECT_TRUE(ops::cpu::testing::all_close(testing::to_vector(nhwc.parameters()[i].value),
                                             testing::to_vector(nchw.parameters()[i].value), 1e-4, 1e-5))
        << nchw.parameters()[i].name;
  }
  // Inference too, through the running statistics.
  const core::NDArray x = testing::random_array(ctx, core::Shape(dims), 999);
  nchw.forward({x}, false);
  nhwc.forward({x}, false);
  EXPECT_TRUE(ops::cpu::testing::all_close(testing::to_vector(nhwc.output(0)), testing::to_vector(nchw.output(0)),
                                           1e-4, 1e-5));
}

TEST(NetLayout, OneConversionAtTheInputAndOneBeforeFlatten) {
  const NetDescription d = with_activation_layout(conv_bn_pool_dense(), TensorLayout::kNHWC);
  EXPECT_EQ(converters(d), (std::vector<std::string>{"data_to_nhwc:data", "pool2_to_nchw:pool2"}));
  for (const LayerSpec& spec : d.layers) {
    if (spec.type == "Conv2D" || spec.type == "BatchNorm" || spec.type == "MaxPool2D" || spec.type == "AvgPool2D") {
      EXPECT_EQ(spec.attributes.at("layout"), "NHWC") << spec.name;
    }
  }
  // Applied again (clone() rebuilds from the rewritten description), nothing changes.
  EXPECT_EQ(with_activation_layout(d, TensorLayout::kNHWC), d);
  // NCHW is the description itself.
  EXPECT_EQ(with_activation_layout(conv_bn_pool_dense(), TensorLayout::kNCHW), conv_bn_pool_dense());
}

TEST(NetLayout, GlobalPoolingNeedsNoConversionBack) {
  const NetDescription d = with_activation_layout(residual_block(), TensorLayout::kNHWC);
  EXPECT_EQ(converters(d), (std::vector<std::string>{"data_to_nhwc:data"}));
}

TEST(NetLayout, ConvBnReluPoolDenseTrainsAsInNchw) {
  expect_same_training(conv_bn_pool_dense(), core::Shape({3, 10, 9}), 5);
}

TEST(NetLayout, ResidualBlockTrainsAsInNchw) { expect_same_training(residual_block(), core::Shape({4, 8, 8}), 3); }

TEST(NetLayout, CheckpointsAreInterchangeable) {
  auto ctx = core::make_cpu_context();
  Net nhwc(with_activation_layout(conv_bn_pool_dense(), TensorLayout::kNHWC), ctx);
  nhwc.initialize(7);
  const std::string path = ::testing::TempDir() + "net_layout_test.safetensors";
  nhwc.save_params(path);
  Net nchw(conv_bn_pool_dense(), ctx);
  nchw.load_params(path);
  std::remove(path.c_str());
  const core::NDArray x = testing::random_array(ctx, core::Shape({2, 3, 10, 9}), 5);
  nchw.forward({x}, false);
  nhwc.forward({x}, false);
  EXPECT_TRUE(ops::cpu::testing::all_close(testing::to_vector(nhwc.output(0)), testing::to_vector(nchw.output(0)),
                                           1e-5, 1e-6));
}

// The variable sets the layout of every net built while it is set.
TEST(NetLayout, TheEnvironmentChoosesTheLayout) {
  struct Unset {
    ~Unset() { unsetenv("DT_CONV_LAYOUT"); }
  } unset;
  auto ctx = core::make_cpu_context();
  setenv("DT_CONV_LAYOUT", "NHWC", 1);
  EXPECT_EQ(converters(Net(residual_block(), ctx).description()).size(), 1u);
  setenv("DT_CONV_LAYOUT", "NCHW", 1);
  EXPECT_TRUE(converters(Net(residual_block(), ctx).description()).empty());
  setenv("DT_CONV_LAYOUT", "nhwc", 1);
  const testing::Thrown thrown = testing::error_of([&] { Net net(residual_block(), ctx); });
  EXPECT_EQ(thrown.code, core::ErrorCode::kInvalidArgument);
  EXPECT_NE(thrown.message.find("DT_CONV_LAYOUT"), std::string::npos) << thrown.message;
}

}  // namespace
}  // namespace dt::nn
