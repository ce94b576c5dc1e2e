#include "train/metrics.h"

#include <gtest/gtest.h>

#include <vector>

#include "core/error.h"

namespace dt::train {
namespace {

using core::DType;
using core::NDArray;
using core::Shape;

TEST(Metrics, CountCorrectTakesArgMaxPerRow) {
  const auto cpu = core::make_cpu_context();
  const std::vector<float> logits = {0.1f, 0.7f, 0.2f, 0.9f, 0.0f, 0.1f};
  NDArray x = NDArray::empty(cpu, DType::kFloat32, Shape({2, 3}));
  x.copy_from_host(logits.data(), logits.size() * sizeof(float));
  const std::vector<int64_t> labels = {1, 2};
  NDArray y = NDArray::empty(cpu, DType::kInt64, Shape({2}));
  y.copy_from_host(labels.data(), labels.size() * sizeof(int64_t));
  EXPECT_EQ(count_correct(x, y), 1);
}

TEST(Metrics, CountCorrectRejectsWrongDtypesWithTheirNames) {
  const auto cpu = core::make_cpu_context();
  const NDArray f64 = NDArray::zeros(cpu, DType::kFloat64, Shape({2, 3}));
  const NDArray f32 = NDArray::zeros(cpu, DType::kFloat32, Shape({2, 3}));
  const NDArray i32 = NDArray::zeros(cpu, DType::kInt32, Shape({2}));
  const NDArray labels_f32 = NDArray::zeros(cpu, DType::kFloat32, Shape({2}));
  try {
    count_correct(f64, i32);
    ADD_FAILURE() << "float64 logits were accepted";
  } catch (const core::Error& e) {
    EXPECT_EQ(e.code(), core::ErrorCode::kNotSupported) << e.what();
  }
  try {
    count_correct(f32, labels_f32);
    ADD_FAILURE() << "float32 labels were accepted";
  } catch (const core::Error& e) {
    EXPECT_EQ(e.code(), core::ErrorCode::kDtypeMismatch) << e.what();
  }
}

}  // namespace
}  // namespace dt::train
