#include "nn/layers/softmax_cross_entropy_loss.h"

#include <gtest/gtest.h>

#include <cmath>

#include "layer_test_util.h"

namespace dt::nn::layers {
namespace {

using core::DType;
using core::ErrorCode;
using core::NDArray;
using core::Shape;
using testing::all_close;
using testing::code_of;
using testing::cpu;
using testing::make_array;
using testing::random_values;
using testing::to_vector;

template <typename T>
NDArray labels_of(const std::vector<T>& values, DType dtype) {
  NDArray a = NDArray::empty(cpu(), dtype, Shape({static_cast<int64_t>(values.size())}));
  a.copy_from_host(values.data(), values.size() * sizeof(T));
  return a;
}

TEST(LayerSoftmaxCrossEntropyLossTest, ValueMatchesAHandComputation) {
  const NDArray logits = make_array(Shape({2, 3}), {1.0f, 2.0f, 3.0f, 1.0f, 1.0f, 1.0f});
  const NDArray labels = labels_of<int32_t>({2, 0}, DType::kInt32);
  // Row 0: log(e + e^2 + e^3) - 3 = log(1 + e^-1 + e^-2); row 1: log 3.
  const double row0 = std::log(1.0 + std::exp(-1.0) + std::exp(-2.0));
  const double row1 = std::log(3.0);
  SoftmaxCrossEntropyLoss mean("mean"), sum("sum");
  EXPECT_NEAR(mean.forward_backward(logits, labels, nullptr), (row0 + row1) / 2.0, 1e-6);
  EXPECT_NEAR(sum.forward_backward(logits, labels, nullptr), row0 + row1, 1e-6);
  EXPECT_EQ(SoftmaxCrossEntropyLoss().reduction(), "mean");

  // The gradient of the mean: (softmax - onehot) / N.
  NDArray grad = NDArray::zeros(cpu(), DType::kFloat32, Shape({2, 3}));
  mean.forward_backward(logits, labels, &grad);
  const double z = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  const std::vector<double> want = {std::exp(1.0) / z / 2, std::exp(2.0) / z / 2, (std::exp(3.0) / z - 1) / 2,
                                    (1.0 / 3 - 1) / 2,      1.0 / 6,               1.0 / 6};
  EXPECT_TRUE(all_close(to_vector(grad), want, 1e-5, 1e-7));
}

TEST(LayerSoftmaxCrossEntropyLossTest, GradientMatchesFiniteDifferencesForBothReductions) {
  const int64_t N = 4, classes = 5;
  const std::vector<int64_t> label_values = {0, 4, 2, 2};
  for (const char* reduction : {"mean", "sum"}) {
    for (DType label_type : {DType::kInt32, DType::kInt64}) {
      SCOPED_TRACE(std::string(reduction) + (label_type == DType::kInt32 ? " int32" : " int64"));
      SoftmaxCrossEntropyLoss loss(reduction);
      NDArray logits = make_array(Shape({N, classes}), random_values(N * classes, 8, -2.0f, 2.0f));
      const NDArray labels = label_type == DType::kInt64
                                 ? labels_of<int64_t>(label_values, DType::kInt64)
                                 : labels_of<int32_t>({0, 4, 2, 2}, DType::kInt32);
      NDArray grad = NDArray::zeros(cpu(), DType::kFloat32, logits.shape());
      loss.forward_backward(logits, labels, &grad);
      // Central differences of the loss itself, eps = 1e-2: float32 rounding
      // of a loss of order 1 is ~1e-7, i.e. ~1e-5 after dividing by 2 eps;
      // truncation is of order eps^2 / 6 times the third derivative (< 1).
      const float eps = 1e-2f;
      float* v = logits.data_as<float>();
      std::vector<double> numeric(logits.size());
      for (size_t i = 0; i < logits.size(); ++i) {
        const float saved = v[i];
        v[i] = saved + eps;
        const double plus = loss.forward_backward(logits, labels, nullptr);
        v[i] = saved - eps;
        const double minus = loss.forward_backward(logits, labels, nullptr);
        v[i] = saved;
        numeric[i] = (plus - minus) / (2.0 * eps);
      }
      EXPECT_TRUE(all_close(to_vector(grad), numeric, 1e-2, 2e-4));
    }
  }
}

TEST(LayerSoftmaxCrossEntropyLossTest, BadLabelsShapesAndDtypes) {
  SoftmaxCrossEntropyLoss loss;
  const NDArray logits = make_array(Shape({2, 3}), std::vector<float>(6, 0.0f));
  std::string message;
  EXPECT_EQ(code_of([&] { loss.forward_backward(logits, labels_of<int32_t>({0, 3}, DType::kInt32), nullptr); },
                    &message),
            ErrorCode::kInvalidArgument);
  EXPECT_NE(message.find("label 3"), std::string::npos) << message;
  EXPECT_EQ(code_of([&] { loss.forward_backward(logits, labels_of<int64_t>({-1, 0}, DType::kInt64), nullptr); }),
            ErrorCode::kInvalidArgument);

  EXPECT_EQ(code_of([&] { loss.forward_backward(logits, labels_of<int32_t>({0, 1, 2}, DType::kInt32), nullptr); },
                    &message),
            ErrorCode::kShapeMismatch);
  EXPECT_NE(message.find("got (3,)"), std::string::npos) << message;
  EXPECT_NE(message.find("(2, 3)"), std::string::npos) << message;

  const NDArray flat = make_array(Shape({6}), std::vector<float>(6, 0.0f));
  EXPECT_EQ(code_of([&] { loss.forward_backward(flat, labels_of<int32_t>({0, 1}, DType::kInt32), nullptr); }),
            ErrorCode::kShapeMismatch);
  NDArray wrong_grad = NDArray::zeros(cpu(), DType::kFloat32, Shape({3, 2}));
  EXPECT_EQ(code_of([&] {
              loss.forward_backward(logits, labels_of<int32_t>({0, 1}, DType::kInt32), &wrong_grad);
            }),
            ErrorCode::kShapeMismatch);

  const NDArray float_labels = make_array(Shape({2}), {0.0f, 1.0f});
  EXPECT_EQ(code_of([&] { loss.forward_backward(logits, float_labels, nullptr); }), ErrorCode::kDtypeMismatch);
  EXPECT_EQ(code_of([] { SoftmaxCrossEntropyLoss("max"); }), ErrorCode::kInvalidArgument);
}

TEST(LayerSoftmaxCrossEntropyLossTest, BatchSizeMayChangeBetweenCalls) {
  SoftmaxCrossEntropyLoss loss("sum");
  const NDArray a = make_array(Shape({2, 2}), {0.0f, 0.0f, 0.0f, 0.0f});
  const NDArray b = make_array(Shape({1, 2}), {0.0f, 0.0f});
  EXPECT_NEAR(loss.forward_backward(a, labels_of<int32_t>({0, 1}, DType::kInt32), nullptr), 2 * std::log(2.0), 1e-6);
  EXPECT_NEAR(loss.forward_backward(b, labels_of<int32_t>({1}, DType::kInt32), nullptr), std::log(2.0), 1e-6);
}

}  // namespace
}  // namespace dt::nn::layers
