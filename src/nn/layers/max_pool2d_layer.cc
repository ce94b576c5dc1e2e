#include "nn/layers/max_pool2d_layer.h"

namespace dt::nn::layers {

MaxPool2DLayer::MaxPool2DLayer(std::string name, const Window& window)
    : Pool2DLayer(std::move(name), window) {
  validate_window();
}

std::unique_ptr<Layer> MaxPool2DLayer::create(const std::string& name, const nlohmann::json& attributes) {
  AttributeReader reader("MaxPool2D", name, attributes);
  const Window window = read_window(reader);
  reader.finish();
  return std::make_unique<MaxPool2DLayer>(name, window);
}

void MaxPool2DLayer::forward(const ForwardArgs& args) {
  check_forward(*this, args, 0);
  const core::NDArray& x = *args.inputs[0];
  ops::MaxPool2D& k = kernels_.get(x, [&] {
    const ops::Pool2DParams p = params_for(x.shape());
    const ops::Target target = target_of(*this, x, args.runtime);
    return run_kernel(*this, [&] { return ops::make_max_pool2d(target, p); });
  });
  argmax_current_ = false;
  run_kernel(*this, [&] {
    // Only a training forward records the argmax that backward routes through.
    if (args.train) {
      k.forward_training(x.data(), args.output->data());
    } else {
      k.forward_inference(x.data(), args.output->data());
    }
  });
  argmax_current_ = args.train;
  argmax_on_gpu_ = on_gpu(x);
  argmax_shape_ = x.shape();
}

void MaxPool2DLayer::backward(const BackwardArgs& args) {
  check_backward(*this, args, 0);
  if (args.input_grads[0] == nullptr) return;
  const core::NDArray& x = *args.inputs[0];
  const bool gpu = on_gpu(x);
  if (!argmax_current_ || argmax_on_gpu_ != gpu || argmax_shape_ != x.shape()) {
    throw core::Error(core::ErrorCode::kBadState, describe(*this) + ": backward needs a training forward on input " +
                                                      x.shape().to_string() + " first");
  }
  ops::MaxPool2D* k = kernels_.find(x);
  if (k == nullptr) {
    const std::string where = gpu ? x.context()->to_string() : "input " + x.shape().to_string();
    throw core::Error(core::ErrorCode::kBadState, describe(*this) + ": backward needs a training forward on " +
                                                      where + " first");
  }
  run_kernel(*this, [&] { k->backward(args.output_grad->data(), args.input_grads[0]->data()); });
}

}  // namespace dt::nn::layers
