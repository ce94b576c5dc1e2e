// Helpers shared by the Net tests: arrays from host data, seeded random
// batches, and the error code of a call that must fail.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/context.h"
#include "core/error.h"
#include "core/ndarray.h"

namespace dt::nn::testing {

inline core::NDArray float_array(const std::shared_ptr<core::Context>& ctx, const core::Shape& shape,
                                 const std::vector<float>& values) {
  auto array = core::NDArray::empty(ctx, core::DType::kFloat32, shape);
  array.copy_from_host(values.data(), values.size() * sizeof(float));
  return array;
}

inline core::NDArray random_array(const std::shared_ptr<core::Context>& ctx, const core::Shape& shape,
                                  uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<float> values(static_cast<size_t>(shape.numel()));
  for (float& v : values) v = normal(rng);
  return float_array(ctx, shape, values);
}

inline core::NDArray labels_array(const std::shared_ptr<core::Context>& ctx, const std::vector<int32_t>& labels) {
  auto array = core::NDArray::empty(ctx, core::DType::kInt32, core::Shape{static_cast<int64_t>(labels.size())});
  array.copy_from_host(labels.data(), labels.size() * sizeof(int32_t));
  return array;
}

inline std::vector<float> to_vector(const core::NDArray& array) {
  std::vector<float> values(array.size());
  array.copy_to_host(values.data(), values.size() * sizeof(float));
  return values;
}

// The Error a call throws, with its message; fails the test if none.
struct Thrown {
  core::ErrorCode code = core::ErrorCode::kInternal;
  std::string message;
};

inline Thrown error_of(const std::function<void()>& call) {
  try {
    call();
  } catch (const core::Error& e) {
    return {e.code(), e.what()};
  }
  ADD_FAILURE() << "expected a dt::core::Error";
  return {};
}

}  // namespace dt::nn::testing
