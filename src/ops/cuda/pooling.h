// The GPU counterparts of ops::cpu::{MaxPool2D, AvgPool2D, GlobalAvgPool2D}:
// the same parameters and calls, with device pointers of the context's GPU,
// on own kernels (ops/cuda/layer_kernels.h). Own kernels rather than cuDNN
// pooling because the CPU interface keeps max pooling's argmax inside the
// object (backward takes dy alone, where cuDNN wants x and y again) and
// defines ties and NaN, which cuDNN leaves open. Calls queue their work on
// the context's stream and return. Arrays are of the kernel's dtype:
// float32, or float16 / bfloat16 in mixed precision (computed in float32).
#pragma once

#include <memory>

#include "core/context.h"
#include "core/dtype.h"
#include "ops/pooling.h"
#include "ops/cuda/device_buffer.h"

namespace dt::ops::cuda {

class MaxPool2D final : public ops::MaxPool2D {
 public:
  // Validates as the CPU kernel does (std::invalid_argument).
  MaxPool2D(std::shared_ptr<core::Context> ctx, const Pool2DParams& params,
            core::DType dtype = core::DType::kFloat32);

  const Pool2DParams& params() const { return p_; }
  void forward_training(const void* x, void* y) override;
  void forward_inference(const void* x, void* y) override;
  // std::logic_error before any forward_training.
  void backward(const void* dy, void* dx) override;

 private:
  std::shared_ptr<core::Context> ctx_;
  Pool2DParams p_;
  core::DType dtype_;
  DeviceBuffer argmax_;  // int32 per output: offset of its maximum in the input plane
  bool have_argmax_ = false;
};

class AvgPool2D final : public ops::AvgPool2D {
 public:
  AvgPool2D(std::shared_ptr<core::Context> ctx, const Pool2DParams& params, bool count_include_pad,
            core::DType dtype = core::DType::kFloat32);

  const Pool2DParams& params() const { return p_; }
  void forward(const void* x, void* y) override;
  void backward(const void* dy, void* dx) override;

 private:
  std::shared_ptr<core::Context> ctx_;
  Pool2DParams p_;
  bool count_include_pad_;
  core::DType dtype_;
};

class GlobalAvgPool2D final : public ops::GlobalAvgPool2D {
 public:
  GlobalAvgPool2D(std::shared_ptr<core::Context> ctx, int64_t N, int64_t C, int64_t H, int64_t W,
                  core::DType dtype = core::DType::kFloat32, TensorLayout layout = TensorLayout::kNCHW);

  void forward(const void* x, void* y) const override;
  void backward(const void* dy, void* dx) const override;

 private:
  std::shared_ptr<core::Context> ctx_;
  core::DType dtype_;
  int64_t rows_;   // N * C
  int64_t plane_;  // H * W
  int64_t channels_;
  TensorLayout layout_;
};

}  // namespace dt::ops::cuda
