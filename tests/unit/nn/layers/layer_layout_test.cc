// The 4-d layers with MXNet's `layout` attribute: "NHWC" takes (N, H, W, C)
// and gives its output channels last, with the same parameters (OIHW
// weights) as "NCHW"; forward and backward equal the NCHW layer's once the
// activations are converted, and the attribute round-trips and is checked.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "error_code_of.h"
#include "layer_test_util.h"
#include "nn/layer.h"
#include "ops/cpu/layout_convert.h"
#include "ops/tensor_layout.h"

namespace dt::nn::layers {
namespace {

using nlohmann::json;
using ops::TensorLayout;
using testing::Harness;
using testing::to_vector;

std::vector<float> convert(const std::vector<float>& v, TensorLayout to, TensorLayout from, const core::Shape& shape) {
  const ops::LogicalDims d = ops::logical_dims(from, shape);
  std::vector<float> out(v.size());
  ops::cpu::convert_layout(out.data(), to, v.data(), from, d, sizeof(float));
  return out;
}

// Runs `type` in both layouts on the same logical input, parameters and
// output gradient, and compares every result in NCHW.
void expect_layouts_agree(const std::string& type, json attributes, const core::Shape& nchw_shape, bool train) {
  SCOPED_TRACE(type + " " + attributes.dump() + (train ? " train" : " inference"));
  const auto nchw_layer = create_layer(type, "l", attributes);
  attributes["layout"] = "NHWC";
  const auto nhwc_layer = create_layer(type, "l", attributes);
  const core::Shape nhwc_shape({nchw_shape[0], nchw_shape[2], nchw_shape[3], nchw_shape[1]});
  Harness a(*nchw_layer, {nchw_shape}, 5), b(*nhwc_layer, {nhwc_shape}, 5);
  ASSERT_EQ(a.num_params(), b.num_params());
  for (size_t i = 0; i < a.num_params(); ++i) {
    ASSERT_EQ(a.param(i).value.shape(), b.param(i).value.shape()) << "parameters do not depend on the layout";
    b.param(i).value.copy_from_host(a.param(i).value.data(), a.param(i).value.nbytes());
  }
  const std::vector<float> x = to_vector(a.input(0));
  const std::vector<float> x_nhwc = convert(x, TensorLayout::kNHWC, TensorLayout::kNCHW, nchw_shape);
  b.input(0).copy_from_host(x_nhwc.data(), x_nhwc.size() * sizeof(float));

  const std::vector<float> ya = a.forward(train), yb = b.forward(train);
  const core::Shape out_nhwc = b.output().shape();
  ASSERT_EQ(out_nhwc, core::Shape({a.output().shape()[0], a.output().shape()[2], a.output().shape()[3],
                                   a.output().shape()[1]}));
  EXPECT_TRUE(testing::all_close(convert(yb, TensorLayout::kNCHW, TensorLayout::kNHWC, out_nhwc), ya, 1e-5, 1e-5));
  if (!train && type == "BatchNorm") return;  // backward needs a training forward
  const std::vector<float> dy = testing::random_values(ya.size(), 77);
  a.backward(dy);
  b.backward(convert(dy, TensorLayout::kNHWC, TensorLayout::kNCHW, a.output().shape()));
  EXPECT_TRUE(testing::all_close(convert(to_vector(b.input_grad(0)), TensorLayout::kNCHW, TensorLayout::kNHWC,
                                         nhwc_shape),
                                 to_vector(a.input_grad(0)), 1e-4, 1e-5))
      << "dx";
  for (size_t i = 0; i < a.num_params(); ++i) {
    if (a.param(i).auxiliary) {
      EXPECT_TRUE(testing::all_close(to_vector(b.param(i).value), to_vector(a.param(i).value), 1e-5, 1e-6))
          << a.param(i).name;
    } else {
      EXPECT_TRUE(testing::all_close(to_vector(b.param(i).grad), to_vector(a.param(i).grad), 1e-4, 1e-4))
          << a.param(i).name;
    }
  }
}

TEST(LayerLayoutTest, NhwcLayersMatchNchwLayers) {
  const core::Shape s({2, 6, 7, 5});
  expect_layouts_agree("Conv2D", {{"channels", 4}, {"kernel_size", 3}, {"padding", 1}, {"strides", 2}}, s, true);
  expect_layouts_agree("Conv2D", {{"channels", 9}, {"kernel_size", {3, 1}}, {"groups", 3}, {"use_bias", false}}, s,
                       true);
  expect_layouts_agree("BatchNorm", json::object(), s, true);
  expect_layouts_agree("BatchNorm", json::object(), s, false);
  expect_layouts_agree("MaxPool2D", {{"pool_size", 3}, {"strides", 2}, {"padding", 1}}, s, true);
  expect_layouts_agree("AvgPool2D", {{"pool_size", 2}, {"count_include_pad", false}, {"padding", 1}}, s, true);
  expect_layouts_agree("GlobalAvgPool2D", json::object(), s, true);
}

TEST(LayerLayoutTest, NhwcGradientsMatchFiniteDifferences) {
  for (const auto& [type, attributes] : std::vector<std::pair<std::string, json>>{
           {"Conv2D", {{"channels", 3}, {"kernel_size", 3}, {"padding", 1}, {"layout", "NHWC"}}},
           {"BatchNorm", {{"layout", "NHWC"}}},
           {"AvgPool2D", {{"pool_size", 2}, {"layout", "NHWC"}}}}) {
    SCOPED_TRACE(type);
    const auto layer = create_layer(type, "l", attributes);
    Harness h(*layer, {core::Shape({2, 5, 4, 3})}, 9);
    testing::expect_gradients_match(h, true, 1e-2f, 1e-2, 1e-3);
  }
}

TEST(LayerLayoutTest, AttributeRoundTripsAndIsChecked) {
  const auto conv = create_layer("Conv2D", "c", {{"channels", 4}, {"kernel_size", 3}, {"layout", "NHWC"}});
  EXPECT_EQ(conv->attributes().at("layout"), "NHWC");
  EXPECT_EQ(conv->output_shape({core::Shape({2, 8, 8, 3})}), core::Shape({2, 6, 6, 4}));
  EXPECT_EQ(conv->param_specs({core::Shape({2, 8, 8, 3})}).at(0).shape, core::Shape({4, 3, 3, 3}));
  // The default stays out of descriptions, which read as they always did.
  EXPECT_FALSE(create_layer("MaxPool2D", "p", json::object())->attributes().contains("layout"));
  const auto pool = create_layer("MaxPool2D", "p", {{"layout", "NHWC"}});
  EXPECT_EQ(create_layer("MaxPool2D", "p", pool->attributes())->attributes(), pool->attributes());
  EXPECT_EQ(create_layer("GlobalAvgPool2D", "g", {{"layout", "NHWC"}})->output_shape({core::Shape({2, 4, 5, 3})}),
            core::Shape({2, 1, 1, 3}));
  EXPECT_EQ(create_layer("BatchNorm", "b", {{"layout", "NHWC"}})->param_specs({core::Shape({2, 4, 5, 3})})[0].shape,
            core::Shape({3}));
  std::string message;
  EXPECT_EQ(test_support::code_of([] { create_layer("AvgPool2D", "p", {{"layout", "NWHC"}}); }, &message),
            core::ErrorCode::kInvalidArgument);
  EXPECT_NE(message.find("NWHC"), std::string::npos) << message;
  EXPECT_EQ(test_support::code_of(
                [&] { conv->output_shape({core::Shape({2, 3, 8})}); }, &message),
            core::ErrorCode::kShapeMismatch);
  EXPECT_NE(message.find("(N, H, W, C)"), std::string::npos) << message;
}

}  // namespace
}  // namespace dt::nn::layers
