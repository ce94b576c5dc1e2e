#include "nn/layer.h"

#include <vector>

#include "core/error.h"
#include "nn/layers/activation_layer.h"
#include "nn/layers/add_layer.h"
#include "nn/layers/avg_pool2d_layer.h"
#include "nn/layers/batch_norm_layer.h"
#include "nn/layers/conv2d_layer.h"
#include "nn/layers/dense_layer.h"
#include "nn/layers/dropout_layer.h"
#include "nn/layers/flatten_layer.h"
#include "nn/layers/global_avg_pool2d_layer.h"
#include "nn/layers/layout_convert_layer.h"
#include "nn/layers/max_pool2d_layer.h"
#include "ops/tensor_math.h"

namespace dt::nn {
namespace {

using core::Error;
using core::ErrorCode;

using Factory = std::unique_ptr<Layer> (*)(const std::string& name, const nlohmann::json& attributes);

struct Registration {
  const char* type;
  Factory factory;
};

// A constant table rather than a registry filled at start-up: no static
// objects to construct or destroy, and the list of types is in one place.
constexpr Registration kLayerTypes[] = {
    {"Dense", &layers::DenseLayer::create},
    {"Conv2D", &layers::Conv2DLayer::create},
    {"MaxPool2D", &layers::MaxPool2DLayer::create},
    {"AvgPool2D", &layers::AvgPool2DLayer::create},
    {"GlobalAvgPool2D", &layers::GlobalAvgPool2DLayer::create},
    {"BatchNorm", &layers::BatchNormLayer::create},
    {"ReLU", &layers::ActivationLayer::create_relu},
    {"Sigmoid", &layers::ActivationLayer::create_sigmoid},
    {"Tanh", &layers::ActivationLayer::create_tanh},
    {"Activation", &layers::ActivationLayer::create_activation},
    {"Dropout", &layers::DropoutLayer::create},
    {"Flatten", &layers::FlattenLayer::create},
    {"Add", &layers::AddLayer::create},
    {"LayoutConvert", &layers::LayoutConvertLayer::create},
};

}  // namespace

std::unique_ptr<Layer> create_layer(const std::string& type, const std::string& name,
                                    const nlohmann::json& attributes) {
  std::string known;
  for (const Registration& entry : kLayerTypes) {
    if (type == entry.type) return entry.factory(name, attributes);
    known += (known.empty() ? "" : ", ") + std::string(entry.type);
  }
  throw Error(ErrorCode::kInvalidArgument,
              "layer '" + name + "': unknown type '" + type + "' (known: " + known + ")");
}

void write_param_grad(Parameter& param, const std::function<void(KernelData dst)>& compute) {
  if (param.grad_req == GradReq::kNull) return;
  if (param.auxiliary) {
    throw Error(ErrorCode::kInvalidArgument, "parameter '" + param.name + "' is auxiliary and has no gradient");
  }
  if (!param.grad.defined()) {
    throw Error(ErrorCode::kBadState, "parameter '" + param.name + "' has no gradient array");
  }
  // float32, or on a GPU the dtype of the value (a mixed-precision net's
  // compute copy of a weight).
  const bool on_cpu = param.grad.context()->is_cpu();
  if ((on_cpu || !core::is_floating(param.grad.dtype())) && param.grad.dtype() != core::DType::kFloat32) {
    throw Error(ErrorCode::kNotSupported,
                "parameter '" + param.name + "': gradients on " + param.grad.context()->to_string() +
                    " are float32, got " + core::dtype_name(param.grad.dtype()));
  }
  if (param.value.defined() && param.grad.dtype() != param.value.dtype()) {
    throw Error(ErrorCode::kDtypeMismatch, "parameter '" + param.name + "': gradient " +
                                               core::dtype_name(param.grad.dtype()) + ", value " +
                                               core::dtype_name(param.value.dtype()));
  }
  if (param.value.defined() && !core::same_device(*param.grad.context(), *param.value.context())) {
    throw Error(ErrorCode::kInvalidArgument, "parameter '" + param.name + "': gradient on " +
                                                 param.grad.context()->to_string() + ", value on " +
                                                 param.value.context()->to_string());
  }
  if (param.value.defined() && param.grad.shape() != param.value.shape()) {
    throw Error(ErrorCode::kShapeMismatch, "parameter '" + param.name + "': gradient " +
                                               param.grad.shape().to_string() + " does not match value " +
                                               param.value.shape().to_string());
  }
  switch (param.grad_req) {
    case GradReq::kWrite:
      compute(KernelData(param.grad));
      return;
    case GradReq::kAdd: {
      if (!on_cpu) {
        // The kernel writes on the gradient's GPU; ops::add sums there.
        const core::NDArray scratch = core::NDArray::empty(param.grad.context(), param.grad.dtype(), param.grad.shape());
        compute(KernelData(scratch));
        ops::add(param.grad, param.grad, scratch);
        return;
      }
      float* grad = param.grad.data_as<float>();
      std::vector<float> scratch(param.grad.size());
      compute(KernelData(scratch.data(), core::DType::kFloat32));
      for (size_t i = 0; i < scratch.size(); ++i) grad[i] += scratch[i];
      return;
    }
    case GradReq::kNull:
      return;
  }
  throw Error(ErrorCode::kInvalidArgument, "parameter '" + param.name + "': unknown grad_req value " +
                                               std::to_string(static_cast<int>(param.grad_req)));
}

}  // namespace dt::nn
