#include "nn/layers/global_avg_pool2d_layer.h"

#include "ops/pooling.h"

namespace dt::nn::layers {
namespace {

// The kernel is a few integers and a loop: building one per call costs
// nothing, so there is no cache.
std::unique_ptr<ops::GlobalAvgPool2D> kernel_for(const Layer& layer, const core::NDArray& x,
                                                 const LayerRuntime* runtime) {
  const ops::Target target = target_of(layer, x, runtime);
  const core::Shape& s = x.shape();
  return ops::make_global_avg_pool2d(target, s[0], s[1], s[2], s[3]);
}

}  // namespace

std::unique_ptr<Layer> GlobalAvgPool2DLayer::create(const std::string& name, const nlohmann::json& attributes) {
  AttributeReader("GlobalAvgPool2D", name, attributes).finish();
  return std::make_unique<GlobalAvgPool2DLayer>(name);
}

core::Shape GlobalAvgPool2DLayer::output_shape(const std::vector<core::Shape>& inputs) const {
  const core::Shape& x = inputs.at(0);
  if (x.ndim() != 4 || x.numel() == 0) throw_shape_error(*this, "a non-empty (N, C, H, W)", x);
  return core::Shape({x[0], x[1], 1, 1});
}

void GlobalAvgPool2DLayer::forward(const ForwardArgs& args) {
  check_forward(*this, args, 0);
  const core::NDArray& x = *args.inputs[0];
  run_kernel(*this, [&] { kernel_for(*this, x, args.runtime)->forward(x.data(), args.output->data()); });
}

void GlobalAvgPool2DLayer::backward(const BackwardArgs& args) {
  check_backward(*this, args, 0);
  if (args.input_grads[0] == nullptr) return;
  run_kernel(*this, [&] {
    kernel_for(*this, *args.inputs[0], args.runtime)->backward(args.output_grad->data(), args.input_grads[0]->data());
  });
}

}  // namespace dt::nn::layers
