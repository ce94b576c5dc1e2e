// The training loss: softmax over the classes and the negative
// log-likelihood of integer labels, fused (numerically stable, and the
// gradient is simply softmax - onehot). Not a layer of the graph: Net's
// output logits go in, the loss and d loss / d logits come out.
#pragma once

#include <memory>
#include <string>

#include "core/ndarray.h"
#include "nn/layers/layer_support.h"
#include "ops/softmax_cross_entropy.h"

namespace dt::nn::layers {

class SoftmaxCrossEntropyLoss {
 public:
  // reduction: "mean" (over the batch, Gluon's and PyTorch's default) or
  // "sum"; anything else is Error(kInvalidArgument).
  explicit SoftmaxCrossEntropyLoss(const std::string& reduction = "mean");

  const std::string& reduction() const { return reduction_name_; }

  // logits (N, classes) float32, labels (N) int32 or int64, all on the CPU
  // or all on one GPU (Error(kInvalidArgument) for a mix).
  // Returns the loss and, when dlogits is given (of the logits' shape),
  // overwrites it with the gradient of the returned loss times
  // gradient_scale (a mixed-precision net's loss scale). A label outside
  // [0, classes) is Error(kInvalidArgument), shapes that do not fit
  // Error(kShapeMismatch), other dtypes Error(kDtypeMismatch).
  double forward_backward(const core::NDArray& logits, const core::NDArray& labels, core::NDArray* dlogits,
                          float gradient_scale = 1.0f);

 private:
  std::string reduction_name_;
  ops::Reduction reduction_;
  KernelCache<ops::SoftmaxCrossEntropy> kernels_;
};

}  // namespace dt::nn::layers
