#include "nn/layers/flatten_layer.h"

#include <cstring>

#include "core/copy.h"

namespace dt::nn::layers {

std::unique_ptr<Layer> FlattenLayer::create(const std::string& name, const nlohmann::json& attributes) {
  AttributeReader("Flatten", name, attributes).finish();
  return std::make_unique<FlattenLayer>(name);
}

core::Shape FlattenLayer::output_shape(const std::vector<core::Shape>& inputs) const {
  const core::Shape& x = inputs.at(0);
  if (x.ndim() < 1) throw_shape_error(*this, "(N, ...) with at least 1 dim", x);
  return core::Shape({x[0], x[0] == 0 ? 0 : x.numel() / x[0]});
}

void FlattenLayer::forward(const ForwardArgs& args) {
  check_forward(*this, args, 0);
  const core::NDArray& x = *args.inputs[0];
  if (on_gpu(x)) {
    if (args.output->data() != x.data()) {
      core::copy_bytes(*args.output->context(), args.output->data(), *x.context(), x.data(), x.nbytes());
    }
    return;
  }
  if (args.output->data() != x.data()) std::memcpy(args.output->data(), x.data(), x.nbytes());
}

void FlattenLayer::backward(const BackwardArgs& args) {
  check_backward(*this, args, 0);
  core::NDArray* dx = args.input_grads[0];
  if (dx == nullptr) return;
  if (on_gpu(*args.inputs[0])) {
    if (dx->data() != args.output_grad->data()) {
      core::copy_bytes(*dx->context(), dx->data(), *args.output_grad->context(), args.output_grad->data(),
                       dx->nbytes());
    }
    return;
  }
  if (dx->data() != args.output_grad->data()) std::memcpy(dx->data(), args.output_grad->data(), dx->nbytes());
}

}  // namespace dt::nn::layers
