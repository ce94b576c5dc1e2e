#include "nn/layers/global_avg_pool2d_layer.h"

#include "ops/pooling.h"

namespace dt::nn::layers {
namespace {

// The kernel is a few integers and a loop: building one per call costs
// nothing, so there is no cache.
std::unique_ptr<ops::GlobalAvgPool2D> kernel_for(const Layer& layer, const core::NDArray& x,
                                                 const LayerRuntime* runtime, ops::TensorLayout layout) {
  const ops::Target target = target_of(layer, x, runtime);
  const ops::LogicalDims d = ops::logical_dims(layout, x.shape());
  return ops::make_global_avg_pool2d(target, d.N, d.C, d.H, d.W, layout);
}

}  // namespace

std::unique_ptr<Layer> GlobalAvgPool2DLayer::create(const std::string& name, const nlohmann::json& attributes) {
  AttributeReader reader("GlobalAvgPool2D", name, attributes);
  const ops::TensorLayout layout = reader.get_layout("layout");
  reader.finish();
  return std::make_unique<GlobalAvgPool2DLayer>(name, layout);
}

core::Shape GlobalAvgPool2DLayer::output_shape(const std::vector<core::Shape>& inputs) const {
  const core::Shape& x = inputs.at(0);
  if (x.ndim() != 4 || x.numel() == 0) throw_shape_error(*this, "a non-empty " + layout_dims_text(layout_), x);
  const ops::LogicalDims d = ops::logical_dims(layout_, x);
  return ops::layout_shape(layout_, d.N, d.C, 1, 1);
}

void GlobalAvgPool2DLayer::forward(const ForwardArgs& args) {
  check_forward(*this, args, 0);
  const core::NDArray& x = *args.inputs[0];
  run_kernel(*this, [&] { kernel_for(*this, x, args.runtime, layout_)->forward(x.data(), args.output->data()); });
}

void GlobalAvgPool2DLayer::backward(const BackwardArgs& args) {
  check_backward(*this, args, 0);
  if (args.input_grads[0] == nullptr) return;
  run_kernel(*this, [&] {
    kernel_for(*this, *args.inputs[0], args.runtime, layout_)->backward(args.output_grad->data(), args.input_grads[0]->data());
  });
}

nlohmann::json GlobalAvgPool2DLayer::attributes() const {
  nlohmann::json a = nlohmann::json::object();
  add_layout_attribute(a, layout_);
  return a;
}

}  // namespace dt::nn::layers
