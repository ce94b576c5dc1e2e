// The GPU counterpart of ops::cpu::SoftmaxCrossEntropy: the same loss and
// gradient over device logits and labels of the context's GPU, on own
// kernels (ops/cuda/layer_kernels.h). forward() waits for the device, since
// it returns the loss to the host (as the CPU kernel does) and must report a
// bad label; backward() queues its kernel and returns.
#pragma once

#include <cstdint>
#include <memory>

#include "core/context.h"
#include "ops/softmax_cross_entropy.h"
#include "ops/cuda/device_buffer.h"

namespace dt::ops::cuda {

class SoftmaxCrossEntropy final : public ops::SoftmaxCrossEntropy {
 public:
  SoftmaxCrossEntropy(std::shared_ptr<core::Context> ctx, int64_t N, int64_t classes,
                      Reduction reduction = Reduction::kMean);

  // A label outside [0, classes) is std::invalid_argument naming the first
  // such row. Unlike the CPU kernel, which checks before it writes, such a
  // batch also voids the previous forward: backward() then needs a new one.
  float forward(const float* logits, const int32_t* labels) override;
  float forward(const float* logits, const int64_t* labels) override;

  // std::logic_error without a successful forward.
  void backward(float* dlogits, float dloss = 1.0f) const override;

  // Softmax of the latest forward, N x classes, in device memory.
  const float* probabilities() const { return prob_.as<float>(); }

 private:
  template <typename Label>
  float forward_impl(const float* logits, const Label* labels);

  std::shared_ptr<core::Context> ctx_;
  int64_t n_;
  int64_t classes_;
  Reduction reduction_;
  DeviceBuffer prob_;      // float, N x classes
  DeviceBuffer labels_;    // int64, N
  DeviceBuffer row_loss_;  // double, N, then the total in one more slot
  DeviceBuffer bad_row_;   // unsigned long long
  bool have_forward_ = false;
};

}  // namespace dt::ops::cuda
