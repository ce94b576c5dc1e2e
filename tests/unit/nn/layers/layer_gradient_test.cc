// Every layer's backward (input and parameter gradients) against central
// finite differences of its forward, L = sum(r * y) with a random r.
//
// Tolerances: |analytic - numeric| <= atol + rtol * |numeric|. For layers
// linear in the perturbed value (Dense, Conv2D, pooling, Add, Flatten,
// Dropout with a fixed mask) central differences are exact up to float32
// rounding of the outputs the element touches, about 1e-4 in absolute terms
// at eps = 1e-2, so atol = 1e-3 and rtol = 1e-2 leave room for rounding only:
// a gradient off by a factor, transposed, or missing a term misses by far
// more. The nonlinear layers (BatchNorm, sigmoid, tanh) add a truncation
// error of order eps^2 = 1e-4 times the third derivative, inside the same
// bounds. ReLU and max pooling get inputs at least 5 eps from their kinks.

#include <gtest/gtest.h>

#include "layer_test_util.h"
#include "nn/layer.h"

namespace dt::nn::layers {
namespace {

using nlohmann::json;
using testing::distinct_values;
using testing::expect_gradients_match;
using testing::Harness;

constexpr float kEps = 1e-2f;
constexpr double kRtol = 1e-2;
constexpr double kAtol = 1e-3;

void check_layer(const std::string& type, const json& attributes, const std::vector<core::Shape>& inputs,
                 bool train = true, uint32_t seed = 3) {
  SCOPED_TRACE(type + " " + attributes.dump());
  const auto layer = create_layer(type, "layer", attributes);
  Harness h(*layer, inputs, seed);
  expect_gradients_match(h, train, kEps, kRtol, kAtol);
}

TEST(LayerGradientTest, DenseFlattensByDefault) {
  check_layer("Dense", {{"units", 5}}, {core::Shape({3, 2, 2, 2})});
}

TEST(LayerGradientTest, DenseWithoutBias) {
  check_layer("Dense", {{"units", 4}, {"use_bias", false}}, {core::Shape({2, 6})});
}

TEST(LayerGradientTest, DenseOnTheLastAxis) {
  check_layer("Dense", {{"units", 3}, {"flatten", false}}, {core::Shape({2, 3, 4})});
}

TEST(LayerGradientTest, Conv2DConfigurations) {
  const json cases[] = {
      {{"channels", 3}, {"kernel_size", 3}},
      {{"channels", 4}, {"kernel_size", {3, 2}}, {"strides", 2}, {"padding", 1}},
      {{"channels", 2}, {"kernel_size", 3}, {"dilation", 2}, {"padding", {2, 1}}},
      {{"channels", 4}, {"kernel_size", 3}, {"groups", 2}, {"strides", {1, 2}}, {"padding", 1}},
      {{"channels", 3}, {"kernel_size", 1}, {"use_bias", false}, {"strides", 2}},
  };
  for (const json& attributes : cases) check_layer("Conv2D", attributes, {core::Shape({2, 4, 7, 6})});
}

TEST(LayerGradientTest, MaxPool2DWithStrideAndPadding) {
  for (const json& attributes : {json{{"pool_size", 2}}, json{{"pool_size", 3}, {"strides", 2}, {"padding", 1}}}) {
    SCOPED_TRACE(attributes.dump());
    const auto layer = create_layer("MaxPool2D", "pool", attributes);
    const core::Shape shape({2, 3, 6, 5});
    Harness h(*layer, {shape}, 5);
    // Spaced 0.1 apart: a perturbation of eps never changes a window's winner.
    const auto x = distinct_values(shape.numel(), 11, 0.1f, -9.0f);
    h.input(0).copy_from_host(x.data(), x.size() * sizeof(float));
    expect_gradients_match(h, true, kEps, kRtol, kAtol);
  }
}

TEST(LayerGradientTest, AvgPool2DBothPaddingConventions) {
  for (bool include : {true, false}) {
    check_layer("AvgPool2D", {{"pool_size", 3}, {"strides", 2}, {"padding", 1}, {"count_include_pad", include}},
                {core::Shape({2, 2, 5, 6})});
  }
}

TEST(LayerGradientTest, GlobalAvgPool2D) { check_layer("GlobalAvgPool2D", json::object(), {core::Shape({2, 3, 4, 5})}); }

TEST(LayerGradientTest, BatchNormTrainingThroughBatchStatistics) {
  check_layer("BatchNorm", json::object(), {core::Shape({4, 3, 3, 2})}, true);
  check_layer("BatchNorm", json::object(), {core::Shape({6, 5})}, true);
}

TEST(LayerGradientTest, ReLUAwayFromZero) {
  const auto layer = create_layer("ReLU", "relu", json::object());
  const core::Shape shape({3, 4, 5});
  Harness h(*layer, {shape}, 2);
  // Half negative, half positive, none within 0.05 of zero.
  const auto x = distinct_values(shape.numel(), 4, 0.1f, -2.95f);
  h.input(0).copy_from_host(x.data(), x.size() * sizeof(float));
  expect_gradients_match(h, true, kEps, kRtol, kAtol);
}

TEST(LayerGradientTest, SigmoidTanhAndActivation) {
  check_layer("Sigmoid", json::object(), {core::Shape({4, 6})});
  check_layer("Tanh", json::object(), {core::Shape({4, 6})});
  check_layer("Activation", {{"act_type", "tanh"}}, {core::Shape({2, 3, 4})});
}

TEST(LayerGradientTest, DropoutWithAFixedMask) {
  // The harness keeps seed and step fixed, so every forward draws one mask.
  check_layer("Dropout", {{"rate", 0.4}}, {core::Shape({4, 25})}, true);
  check_layer("Dropout", {{"rate", 0.4}}, {core::Shape({4, 25})}, false);
}

TEST(LayerGradientTest, FlattenAndAdd) {
  check_layer("Flatten", json::object(), {core::Shape({2, 3, 2, 2})});
  check_layer("Add", json::object(), {core::Shape({2, 3, 4}), core::Shape({2, 3, 4})});
}

}  // namespace
}  // namespace dt::nn::layers
