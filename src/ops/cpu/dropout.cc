#include "ops/cpu/dropout.h"

#include <string>

#include "core/error.h"
#include "ops/dropout_mask.h"

namespace dt::ops::cpu {
namespace {

void require_float32(core::DType dtype) {
  if (dtype != core::DType::kFloat32) {
    throw core::Error(core::ErrorCode::kNotSupported,
                      std::string("dropout on the CPU is float32 only, got ") + core::dtype_name(dtype));
  }
}

}  // namespace

void dropout_forward(core::DType dtype, const void* x, void* y, uint8_t* mask, size_t count, uint64_t key,
                     double rate) {
  require_float32(dtype);
  const float* in = static_cast<const float*>(x);
  float* out = static_cast<float*>(y);
  const float scale = static_cast<float>(1.0 / (1.0 - rate));
  for (size_t i = 0; i < count; ++i) {
    mask[i] = dropout_keeps(key, i, rate) ? 1 : 0;
    out[i] = mask[i] ? in[i] * scale : 0.0f;
  }
}

void dropout_backward(core::DType dtype, const void* dy, void* dx, const uint8_t* mask, size_t count, double rate) {
  require_float32(dtype);
  const float* g = static_cast<const float*>(dy);
  float* out = static_cast<float*>(dx);
  const float scale = static_cast<float>(1.0 / (1.0 - rate));
  for (size_t i = 0; i < count; ++i) out[i] = mask[i] ? g[i] * scale : 0.0f;
}

}  // namespace dt::ops::cpu
