// Small helpers shared by the optimizer tests: arrays from literals, values
// back out, and the code / message of an expected error.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "core/ndarray.h"

namespace dt::optim::testing {

inline core::NDArray f32(const std::vector<float>& values) {
  core::NDArray out = core::NDArray::empty(core::make_cpu_context(), core::DType::kFloat32,
                                           core::Shape({static_cast<int64_t>(values.size())}));
  out.copy_from_host(values.data(), values.size() * sizeof(float));
  return out;
}

inline std::vector<float> values_of(const core::NDArray& array) {
  std::vector<float> out(array.size());
  array.copy_to_host(out.data(), out.size() * sizeof(float));
  return out;
}

// A 16-bit float array (float16 or bfloat16) holding the rounded values.
inline core::NDArray half_array(core::DType dtype, const std::vector<float>& values) {
  std::vector<uint16_t> bits;
  for (float v : values) {
    bits.push_back(dtype == core::DType::kFloat16 ? core::float_to_half(v) : core::float_to_bfloat16(v));
  }
  core::NDArray out = core::NDArray::empty(core::make_cpu_context(), dtype,
                                           core::Shape({static_cast<int64_t>(values.size())}));
  out.copy_from_host(bits.data(), bits.size() * sizeof(uint16_t));
  return out;
}

inline std::vector<float> half_values(const core::NDArray& array) {
  std::vector<uint16_t> bits(array.size());
  array.copy_to_host(bits.data(), bits.size() * sizeof(uint16_t));
  std::vector<float> out;
  for (uint16_t b : bits) {
    out.push_back(array.dtype() == core::DType::kFloat16 ? core::half_to_float(b) : core::bfloat16_to_float(b));
  }
  return out;
}

struct Thrown {
  core::ErrorCode code = core::ErrorCode::kInternal;
  std::string message;
};

// The error fn throws; a failure (and kInternal) when it throws none.
inline Thrown error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const core::Error& e) {
    return {e.code(), e.what()};
  }
  ADD_FAILURE() << "no error thrown";
  return {};
}

}  // namespace dt::optim::testing
