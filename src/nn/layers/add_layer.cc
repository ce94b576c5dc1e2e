#include "nn/layers/add_layer.h"

#include <cstring>

#include "core/copy.h"
#include "ops/tensor_math.h"

namespace dt::nn::layers {

std::unique_ptr<Layer> AddLayer::create(const std::string& name, const nlohmann::json& attributes) {
  AttributeReader("Add", name, attributes).finish();
  return std::make_unique<AddLayer>(name);
}

core::Shape AddLayer::output_shape(const std::vector<core::Shape>& inputs) const {
  if (inputs.size() != 2) {
    throw core::Error(core::ErrorCode::kInvalidArgument,
                      describe(*this) + ": takes 2 inputs, got " + std::to_string(inputs.size()));
  }
  if (inputs[0] != inputs[1]) {
    throw core::Error(core::ErrorCode::kShapeMismatch, describe(*this) + ": inputs must have equal shapes, got " +
                                                           inputs[0].to_string() + " and " +
                                                           inputs[1].to_string());
  }
  return inputs[0];
}

void AddLayer::forward(const ForwardArgs& args) {
  check_forward(*this, args, 0);
  if (on_gpu(*args.inputs[0])) {
    ops::add(*args.output, *args.inputs[0], *args.inputs[1]);
    return;
  }
  const float* a = args.inputs[0]->data_as<float>();
  const float* b = args.inputs[1]->data_as<float>();
  float* y = args.output->data_as<float>();
  const size_t n = args.output->size();
  for (size_t i = 0; i < n; ++i) y[i] = a[i] + b[i];
}

void AddLayer::backward(const BackwardArgs& args) {
  check_backward(*this, args, 0);
  const core::NDArray& dy = *args.output_grad;
  if (on_gpu(*args.inputs[0])) {
    for (core::NDArray* dx : args.input_grads) {
      if (dx != nullptr && dx->data() != dy.data()) {
        core::copy_bytes(*dx->context(), dx->data(), *dy.context(), dy.data(), dy.nbytes());
      }
    }
    return;
  }
  for (core::NDArray* dx : args.input_grads) {
    if (dx != nullptr && dx->data() != dy.data()) std::memcpy(dx->data(), dy.data(), dy.nbytes());
  }
}

}  // namespace dt::nn::layers
