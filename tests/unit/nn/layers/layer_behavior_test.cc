// What gradient checks cannot see: grad_req handling, BatchNorm's running
// statistics, Dropout's mask, kernel caching across batch sizes, and the
// errors for wrong shapes, dtypes and call order.

#include <gtest/gtest.h>

#include <cmath>

#include "layer_test_util.h"
#include "nn/layer.h"
#include "nn/layers/dropout_layer.h"

namespace dt::nn::layers {
namespace {

using core::ErrorCode;
using core::Shape;
using nlohmann::json;
using testing::all_close;
using testing::code_of;
using testing::Harness;
using testing::make_array;
using testing::random_values;
using testing::to_vector;

std::vector<float> scaled(const std::vector<float>& v, float k) {
  std::vector<float> out(v);
  for (float& e : out) e *= k;
  return out;
}

TEST(LayerGradReqTest, AddAccumulatesAndNullLeavesGradientAlone) {
  const auto layer = create_layer("Conv2D", "conv", {{"channels", 3}, {"kernel_size", 3}, {"padding", 1}});
  Harness h(*layer, {Shape({2, 2, 5, 5})}, 8);
  const std::vector<float> y = h.forward(true);
  const std::vector<float> dy = random_values(y.size(), 21);
  h.backward(dy);
  const std::vector<float> dw = to_vector(h.param(0).grad);
  const std::vector<float> db = to_vector(h.param(1).grad);

  // add: starting from zero, two backward calls give twice the gradient.
  h.param(0).grad_req = GradReq::kAdd;
  h.param(1).grad_req = GradReq::kAdd;
  h.param(0).grad.copy_from_host(std::vector<float>(dw.size(), 0.0f).data(), dw.size() * sizeof(float));
  h.param(1).grad.copy_from_host(std::vector<float>(db.size(), 0.0f).data(), db.size() * sizeof(float));
  h.backward(dy);
  h.backward(dy);
  EXPECT_TRUE(all_close(to_vector(h.param(0).grad), scaled(dw, 2.0f), 1e-5, 1e-6));
  EXPECT_TRUE(all_close(to_vector(h.param(1).grad), scaled(db, 2.0f), 1e-5, 1e-6));

  // null on the weight: its gradient stays as it was while the bias's is
  // still written (the kernel computes both in one call).
  h.param(0).grad_req = GradReq::kNull;
  h.param(1).grad_req = GradReq::kWrite;
  const std::vector<float> sentinel(dw.size(), 7.0f);
  h.param(0).grad.copy_from_host(sentinel.data(), sentinel.size() * sizeof(float));
  h.backward(dy, {false});
  EXPECT_EQ(to_vector(h.param(0).grad), sentinel);
  EXPECT_TRUE(all_close(to_vector(h.param(1).grad), db, 1e-5, 1e-6));

  // and the other way round.
  h.param(0).grad_req = GradReq::kWrite;
  h.param(1).grad_req = GradReq::kNull;
  const std::vector<float> bias_sentinel(db.size(), -3.0f);
  h.param(1).grad.copy_from_host(bias_sentinel.data(), bias_sentinel.size() * sizeof(float));
  h.backward(dy);
  EXPECT_TRUE(all_close(to_vector(h.param(0).grad), dw, 1e-5, 1e-6));
  EXPECT_EQ(to_vector(h.param(1).grad), bias_sentinel);
}

TEST(LayerGradReqTest, InputGradientIsSkippedWhenNotRequested) {
  const auto layer = create_layer("Dense", "fc", {{"units", 3}});
  Harness h(*layer, {Shape({2, 4})}, 1);
  const std::vector<float> sentinel(8, 5.0f);
  h.input_grad(0).copy_from_host(sentinel.data(), sentinel.size() * sizeof(float));
  const std::vector<float> y = h.forward(true);
  h.backward(random_values(y.size(), 2), {false});
  EXPECT_EQ(to_vector(h.input_grad(0)), sentinel);
}

TEST(LayerGradReqTest, BatchNormAccumulatesGammaAndBeta) {
  const auto layer = create_layer("BatchNorm", "bn", json::object());
  Harness h(*layer, {Shape({4, 3, 2, 2})}, 4);
  const std::vector<float> dy = random_values(h.forward(true).size(), 5);
  h.backward(dy);
  const std::vector<float> dgamma = to_vector(h.param(0).grad);
  const std::vector<float> dbeta = to_vector(h.param(1).grad);
  const std::vector<float> dx = to_vector(h.input_grad(0));
  h.param(0).grad_req = GradReq::kAdd;
  h.param(1).grad_req = GradReq::kNull;
  h.backward(dy);
  EXPECT_TRUE(all_close(to_vector(h.param(0).grad), scaled(dgamma, 2.0f), 1e-5, 1e-6));
  EXPECT_EQ(to_vector(h.param(1).grad), dbeta);
  // Neither parameter wanted: dx is still computed.
  h.param(0).grad_req = GradReq::kNull;
  h.input_grad(0).copy_from_host(std::vector<float>(dx.size(), 0.0f).data(), dx.size() * sizeof(float));
  h.backward(dy);
  EXPECT_TRUE(all_close(to_vector(h.input_grad(0)), dx, 1e-5, 1e-6));
}

// Per-channel statistics of x (N, C, S) in double: mean and biased variance.
void channel_stats(const std::vector<float>& x, int64_t N, int64_t C, int64_t S, std::vector<double>& mean,
                   std::vector<double>& var) {
  mean.assign(C, 0.0);
  var.assign(C, 0.0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t s = 0; s < S; ++s) mean[c] += x[(n * C + c) * S + s];
  for (auto& m : mean) m /= static_cast<double>(N * S);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t s = 0; s < S; ++s) {
        const double d = x[(n * C + c) * S + s] - mean[c];
        var[c] += d * d;
      }
  for (auto& v : var) v /= static_cast<double>(N * S);
}

TEST(LayerBatchNormTest, TrainingUpdatesRunningStatisticsWithGluonMomentum) {
  const double momentum = 0.7;  // not 0.9 or 0.1, so that a swapped convention shows
  const auto layer = create_layer("BatchNorm", "bn", {{"momentum", momentum}});
  const int64_t N = 5, C = 3, S = 6;
  Harness h(*layer, {Shape({N, C, 2, 3})}, 6);
  const std::vector<float> rm0 = {0.5f, -1.0f, 2.0f}, rv0 = {1.5f, 0.25f, 3.0f};
  h.param(2).value.copy_from_host(rm0.data(), 3 * sizeof(float));
  h.param(3).value.copy_from_host(rv0.data(), 3 * sizeof(float));
  const std::vector<float> x = random_values(N * C * S, 12, -2.0f, 3.0f);
  h.input(0).copy_from_host(x.data(), x.size() * sizeof(float));
  const std::vector<float> y = h.forward(true);

  std::vector<double> mean, var;
  channel_stats(x, N, C, S, mean, var);
  std::vector<double> want_rm(C), want_rv(C);
  const double unbias = static_cast<double>(N * S) / static_cast<double>(N * S - 1);
  for (int64_t c = 0; c < C; ++c) {
    want_rm[c] = momentum * rm0[c] + (1.0 - momentum) * mean[c];
    want_rv[c] = momentum * rv0[c] + (1.0 - momentum) * var[c] * unbias;
  }
  EXPECT_TRUE(all_close(to_vector(h.param(2).value), want_rm, 1e-5, 1e-5));
  EXPECT_TRUE(all_close(to_vector(h.param(3).value), want_rv, 1e-5, 1e-5));

  // The training output is normalised with the batch statistics.
  const std::vector<float> gamma = to_vector(h.param(0).value), beta = to_vector(h.param(1).value);
  std::vector<double> want_y(y.size());
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t s = 0; s < S; ++s) {
        const size_t i = (n * C + c) * S + s;
        want_y[i] = gamma[c] * (x[i] - mean[c]) / std::sqrt(var[c] + 1e-5) + beta[c];
      }
  EXPECT_TRUE(all_close(y, want_y, 1e-4, 1e-4));
}

TEST(LayerBatchNormTest, InferenceUsesRunningStatisticsAndLeavesThemAlone) {
  const auto layer = create_layer("BatchNorm", "bn", {{"epsilon", 1e-3}});
  const int64_t N = 3, C = 2, S = 4;
  Harness h(*layer, {Shape({N, C, S})}, 7);
  const std::vector<float> rm = {0.3f, -0.7f}, rv = {2.0f, 0.5f};
  h.param(2).value.copy_from_host(rm.data(), 2 * sizeof(float));
  h.param(3).value.copy_from_host(rv.data(), 2 * sizeof(float));
  const std::vector<float> x = to_vector(h.input(0));
  const std::vector<float> y = h.forward(false);
  const std::vector<float> gamma = to_vector(h.param(0).value), beta = to_vector(h.param(1).value);
  std::vector<double> want(y.size());
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t s = 0; s < S; ++s) {
        const size_t i = (n * C + c) * S + s;
        want[i] = gamma[c] * (x[i] - rm[c]) / std::sqrt(rv[c] + 1e-3) + beta[c];
      }
  EXPECT_TRUE(all_close(y, want, 1e-5, 1e-5));
  EXPECT_EQ(to_vector(h.param(2).value), rm);
  EXPECT_EQ(to_vector(h.param(3).value), rv);
}

TEST(LayerBatchNormTest, BackwardNeedsATrainingForward) {
  const auto layer = create_layer("BatchNorm", "bn", json::object());
  Harness h(*layer, {Shape({2, 3})}, 1);
  const std::vector<float> y = h.forward(false);
  std::string message;
  EXPECT_EQ(code_of([&] { h.backward(y); }, &message), ErrorCode::kBadState);
  EXPECT_NE(message.find("BatchNorm 'bn'"), std::string::npos) << message;
}

TEST(LayerDropoutTest, InferenceIsIdentityAndTrainingDropsAtTheRate) {
  const double rate = 0.3;
  const auto layer = create_layer("Dropout", "drop", {{"rate", rate}});
  const Shape shape({100, 1000});
  Harness h(*layer, {shape}, 3);
  const std::vector<float> x = to_vector(h.input(0));
  EXPECT_EQ(h.forward(false), x);

  const std::vector<float> y = h.forward(true);
  size_t dropped = 0;
  const float scale = static_cast<float>(1.0 / (1.0 - rate));
  for (size_t i = 0; i < y.size(); ++i) {
    if (y[i] == 0.0f) {
      ++dropped;
    } else {
      ASSERT_FLOAT_EQ(y[i], x[i] * scale) << i;
    }
  }
  // 100k Bernoulli(0.3) draws: the fraction's standard deviation is 0.0014.
  EXPECT_NEAR(static_cast<double>(dropped) / y.size(), rate, 0.01);
}

TEST(LayerDropoutTest, MaskReplaysPerSeedStepAndName) {
  auto mask = [](const std::string& name, uint64_t seed, uint64_t step) {
    const auto layer = create_layer("Dropout", name, {{"rate", 0.5}});
    Harness h(*layer, {Shape({4, 64})}, 1);
    h.runtime().seed = seed;
    h.runtime().step = step;
    std::vector<bool> kept;
    for (float v : h.forward(true)) kept.push_back(v != 0.0f);
    return kept;
  };
  const auto base = mask("drop", 1, 1);
  EXPECT_EQ(mask("drop", 1, 1), base);
  EXPECT_NE(mask("drop", 1, 2), base);
  EXPECT_NE(mask("drop", 2, 1), base);
  EXPECT_NE(mask("drop2", 1, 1), base);
}

TEST(LayerDropoutTest, BackwardAfterInferenceIsIdentity) {
  const auto layer = create_layer("Dropout", "drop", {{"rate", 0.5}});
  Harness h(*layer, {Shape({3, 5})}, 1);
  h.forward(false);
  const std::vector<float> dy = random_values(15, 4);
  h.backward(dy);
  EXPECT_EQ(to_vector(h.input_grad(0)), dy);
}

TEST(LayerCacheTest, SmallerLastBatchGetsItsOwnKernel) {
  // One layer, two batch sizes in turn, against fresh layers per size.
  const json attributes = {{"channels", 4}, {"kernel_size", 3}, {"strides", 2}};
  const auto shared = create_layer("Conv2D", "conv", attributes);
  for (int64_t n : {4, 3, 4}) {
    SCOPED_TRACE(n);
    Harness h(*shared, {Shape({n, 2, 7, 7})}, 9);
    const auto fresh = create_layer("Conv2D", "conv", attributes);
    Harness reference(*fresh, {Shape({n, 2, 7, 7})}, 9);
    EXPECT_EQ(h.forward(true), reference.forward(true));
    const std::vector<float> dy = random_values(h.output().size(), 3);
    h.backward(dy);
    reference.backward(dy);
    EXPECT_EQ(to_vector(h.input_grad(0)), to_vector(reference.input_grad(0)));
    EXPECT_EQ(to_vector(h.param(0).grad), to_vector(reference.param(0).grad));
  }
}

TEST(LayerShapeTest, OutputShapesAndParameterShapes) {
  auto out = [](const std::string& type, const json& a, std::vector<Shape> in) {
    return create_layer(type, "l", a)->output_shape(in);
  };
  EXPECT_EQ(out("Conv2D", {{"channels", 8}, {"kernel_size", 3}, {"strides", 2}, {"padding", 1}},
                {Shape({2, 3, 28, 28})}),
            Shape({2, 8, 14, 14}));
  EXPECT_EQ(out("Conv2D", {{"channels", 8}, {"kernel_size", 3}, {"dilation", 2}}, {Shape({2, 3, 9, 9})}),
            Shape({2, 8, 5, 5}));
  EXPECT_EQ(out("MaxPool2D", {{"pool_size", 3}, {"strides", 2}, {"padding", 1}}, {Shape({1, 4, 8, 8})}),
            Shape({1, 4, 4, 4}));
  EXPECT_EQ(out("AvgPool2D", {{"pool_size", 2}}, {Shape({1, 4, 9, 8})}), Shape({1, 4, 4, 4}));
  EXPECT_EQ(out("GlobalAvgPool2D", json::object(), {Shape({5, 7, 3, 3})}), Shape({5, 7, 1, 1}));
  EXPECT_EQ(out("Flatten", json::object(), {Shape({5, 7, 3, 3})}), Shape({5, 63}));
  EXPECT_EQ(out("Dense", {{"units", 10}}, {Shape({5, 7, 3, 3})}), Shape({5, 10}));
  EXPECT_EQ(out("Dense", {{"units", 10}, {"flatten", false}}, {Shape({5, 7, 3})}), Shape({5, 7, 10}));

  const auto conv = create_layer("Conv2D", "c", {{"channels", 6}, {"kernel_size", {3, 5}}, {"groups", 2}});
  const auto specs = conv->param_specs({Shape({1, 4, 9, 9})});
  ASSERT_EQ(specs.size(), 2u);
  EXPECT_EQ(specs[0].suffix, "weight");
  EXPECT_EQ(specs[0].shape, Shape({6, 2, 3, 5}));
  EXPECT_EQ(specs[1].shape, Shape({6}));
  const auto dense = create_layer("Dense", "d", {{"units", 10}})->param_specs({Shape({5, 7, 3, 3})});
  EXPECT_EQ(dense[0].shape, Shape({10, 63}));
  const auto bn = create_layer("BatchNorm", "b", json::object())->param_specs({Shape({5, 7, 3, 3})});
  ASSERT_EQ(bn.size(), 4u);
  EXPECT_EQ(bn[2].suffix, "running_mean");
  EXPECT_TRUE(bn[2].auxiliary && bn[3].auxiliary && !bn[0].auxiliary && !bn[1].auxiliary);
  EXPECT_EQ(bn[3].init.kind, Initializer::Kind::kOnes);
}

TEST(LayerShapeTest, MismatchesNameTheLayerAndShapes) {
  std::string message;
  const auto conv = create_layer("Conv2D", "conv1", {{"channels", 8}, {"kernel_size", 3}, {"in_channels", 3}});
  EXPECT_EQ(code_of([&] { conv->output_shape({Shape({64, 1, 28, 28})}); }, &message), ErrorCode::kShapeMismatch);
  EXPECT_EQ(message, "Conv2D 'conv1': expected input (N, C, H, W) with C=3, got (64, 1, 28, 28)");

  const auto add = create_layer("Add", "sum", json::object());
  EXPECT_EQ(code_of([&] { add->output_shape({Shape({2, 3}), Shape({2, 4})}); }, &message),
            ErrorCode::kShapeMismatch);
  EXPECT_NE(message.find("(2, 3) and (2, 4)"), std::string::npos) << message;

  const auto small = create_layer("Conv2D", "c", {{"channels", 2}, {"kernel_size", 5}});
  EXPECT_EQ(code_of([&] { small->output_shape({Shape({1, 1, 3, 3})}); }), ErrorCode::kShapeMismatch);
  const auto dense = create_layer("Dense", "fc", {{"units", 2}, {"in_units", 6}});
  EXPECT_EQ(code_of([&] { dense->output_shape({Shape({1, 5})}); }), ErrorCode::kShapeMismatch);
  const auto pool = create_layer("GlobalAvgPool2D", "gap", json::object());
  EXPECT_EQ(code_of([&] { pool->output_shape({Shape({1, 5})}); }), ErrorCode::kShapeMismatch);
}

TEST(LayerShapeTest, WrongDtypeAndMissingEngine) {
  const auto layer = create_layer("ReLU", "relu", json::object());
  const Shape shape({2, 3});
  const core::NDArray x = core::NDArray::zeros(testing::cpu(), core::DType::kInt32, shape);
  core::NDArray y = core::NDArray::zeros(testing::cpu(), core::DType::kFloat32, shape);
  ops::cpu::CpuEngine engine(1);
  LayerRuntime runtime;
  runtime.engine = &engine;
  ForwardArgs args;
  args.inputs = {&x};
  args.output = &y;
  args.runtime = &runtime;
  std::string message;
  EXPECT_EQ(code_of([&] { layer->forward(args); }, &message), ErrorCode::kDtypeMismatch);
  EXPECT_NE(message.find("ReLU 'relu'"), std::string::npos) << message;

  const core::NDArray xf = make_array(shape, std::vector<float>(6, 1.0f));
  args.inputs = {&xf};
  args.runtime = nullptr;
  EXPECT_EQ(code_of([&] { layer->forward(args); }), ErrorCode::kBadState);
  args.runtime = &runtime;
  core::NDArray wrong = core::NDArray::zeros(testing::cpu(), core::DType::kFloat32, Shape({3, 2}));
  args.output = &wrong;
  EXPECT_EQ(code_of([&] { layer->forward(args); }), ErrorCode::kShapeMismatch);
}

TEST(LayerMaxPoolTest, BackwardWithoutTrainingForwardIsAnError) {
  const auto layer = create_layer("MaxPool2D", "pool", json::object());
  Harness h(*layer, {Shape({1, 1, 4, 4})}, 1);
  const std::vector<float> y = h.forward(false);
  EXPECT_EQ(code_of([&] { h.backward(y); }), ErrorCode::kBadState);
}

}  // namespace
}  // namespace dt::nn::layers
