#include "nn/layers/softmax_cross_entropy_loss.h"

#include <stdexcept>

namespace dt::nn::layers {

using core::Error;
using core::ErrorCode;

namespace {

constexpr const char* kWho = "SoftmaxCrossEntropyLoss: ";

void require_cpu(const core::NDArray& array, const char* what) {
  if (!array.defined()) throw Error(ErrorCode::kInvalidArgument, std::string(kWho) + what + " is not allocated");
  if (!array.context()->is_cpu()) {
    throw Error(ErrorCode::kNotSupported, std::string(kWho) + what + " is on " + array.context()->to_string() +
                                              "; the loss runs on the CPU only");
  }
}

// On the CPU, require_cpu; on a GPU, the logits' very device.
void require_on(const core::NDArray& array, const char* what, const core::NDArray& logits) {
  if (logits.context()->is_cpu() || !array.defined()) {
    require_cpu(array, what);
    return;
  }
  const core::Context& at = *array.context();
  const core::Context& device = *logits.context();
  if (!core::same_device(at, device)) {
    throw Error(ErrorCode::kInvalidArgument,
                std::string(kWho) + what + " is on " + at.to_string() + ", the logits on " + device.to_string());
  }
}

}  // namespace

SoftmaxCrossEntropyLoss::SoftmaxCrossEntropyLoss(const std::string& reduction)
    : reduction_name_(reduction) {
  if (reduction == "mean") {
    reduction_ = ops::Reduction::kMean;
  } else if (reduction == "sum") {
    reduction_ = ops::Reduction::kSum;
  } else {
    throw Error(ErrorCode::kInvalidArgument,
                std::string(kWho) + "reduction must be \"mean\" or \"sum\", got \"" + reduction + "\"");
  }
}

double SoftmaxCrossEntropyLoss::forward_backward(const core::NDArray& logits, const core::NDArray& labels,
                                                 core::NDArray* dlogits, float gradient_scale) {
  if (!logits.defined() || logits.context()->is_cpu()) require_cpu(logits, "logits");
  require_on(labels, "labels", logits);
  if (logits.dtype() != core::DType::kFloat32) {
    throw Error(ErrorCode::kDtypeMismatch,
                std::string(kWho) + "logits must be float32 (F32), got " + core::dtype_name(logits.dtype()));
  }
  if (labels.dtype() != core::DType::kInt32 && labels.dtype() != core::DType::kInt64) {
    throw Error(ErrorCode::kDtypeMismatch, std::string(kWho) + "labels must be int32 or int64, got " +
                                               core::dtype_name(labels.dtype()));
  }
  const core::Shape& s = logits.shape();
  if (s.ndim() != 2 || s[0] == 0 || s[1] == 0) {
    throw Error(ErrorCode::kShapeMismatch,
                std::string(kWho) + "expected non-empty logits (N, classes), got " + s.to_string());
  }
  if (labels.shape() != core::Shape({s[0]})) {
    throw Error(ErrorCode::kShapeMismatch, std::string(kWho) + "expected labels " + core::Shape({s[0]}).to_string() +
                                               " for logits " + s.to_string() + ", got " +
                                               labels.shape().to_string());
  }
  if (dlogits != nullptr) {
    require_on(*dlogits, "dlogits", logits);
    if (dlogits->dtype() != core::DType::kFloat32) {
      throw Error(ErrorCode::kDtypeMismatch, std::string(kWho) + "dlogits must be float32 (F32), got " +
                                                 core::dtype_name(dlogits->dtype()));
    }
    if (dlogits->shape() != s) {
      throw Error(ErrorCode::kShapeMismatch, std::string(kWho) + "dlogits " + dlogits->shape().to_string() +
                                                 " must have the logits' shape " + s.to_string());
    }
  }
  ops::SoftmaxCrossEntropy& k = kernels_.get(logits, [&] {
    ops::Target target;
    target.context = logits.context();
    return ops::make_softmax_cross_entropy(target, s[0], s[1], reduction_);
  });
  float loss = 0.0f;
  try {
    loss = labels.dtype() == core::DType::kInt32 ? k.forward(logits.data_as<float>(), labels.data_as<int32_t>())
                                                 : k.forward(logits.data_as<float>(), labels.data_as<int64_t>());
  } catch (const std::invalid_argument& e) {
    throw Error(ErrorCode::kInvalidArgument, std::string(kWho) + e.what());
  }
  if (dlogits != nullptr) k.backward(dlogits->data_as<float>(), gradient_scale);
  return loss;
}

}  // namespace dt::nn::layers
