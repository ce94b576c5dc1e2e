#include "nn/layers/avg_pool2d_layer.h"

namespace dt::nn::layers {

AvgPool2DLayer::AvgPool2DLayer(std::string name, const Window& window, bool count_include_pad)
    : Pool2DLayer(std::move(name), window),
      count_include_pad_(count_include_pad) {
  validate_window();
}

std::unique_ptr<Layer> AvgPool2DLayer::create(const std::string& name, const nlohmann::json& attributes) {
  AttributeReader reader("AvgPool2D", name, attributes);
  const Window window = read_window(reader);
  const bool count_include_pad = reader.get_bool("count_include_pad", true);
  reader.finish();
  return std::make_unique<AvgPool2DLayer>(name, window, count_include_pad);
}

ops::AvgPool2D& AvgPool2DLayer::kernel(const core::NDArray& input, const LayerRuntime* runtime) {
  return kernels_.get(input, [&] {
    const ops::Pool2DParams p = params_for(input.shape());
    const ops::Target target = target_of(*this, input, runtime);
    return run_kernel(*this, [&] { return ops::make_avg_pool2d(target, p, count_include_pad_); });
  });
}

void AvgPool2DLayer::forward(const ForwardArgs& args) {
  check_forward(*this, args, 0);
  const core::NDArray& x = *args.inputs[0];
  ops::AvgPool2D& k = kernel(x, args.runtime);
  run_kernel(*this, [&] { k.forward(x.data(), args.output->data()); });
}

void AvgPool2DLayer::backward(const BackwardArgs& args) {
  check_backward(*this, args, 0);
  if (args.input_grads[0] == nullptr) return;
  ops::AvgPool2D& k = kernel(*args.inputs[0], args.runtime);
  run_kernel(*this, [&] { k.backward(args.output_grad->data(), args.input_grads[0]->data()); });
}

nlohmann::json AvgPool2DLayer::attributes() const {
  nlohmann::json a = Pool2DLayer::attributes();
  a["count_include_pad"] = count_include_pad_;
  return a;
}

}  // namespace dt::nn::layers
