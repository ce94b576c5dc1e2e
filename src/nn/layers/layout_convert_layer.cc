#include "nn/layers/layout_convert_layer.h"

#include "ops/layout_convert.h"

namespace dt::nn::layers {

std::unique_ptr<Layer> LayoutConvertLayer::create(const std::string& name, const nlohmann::json& attributes) {
  AttributeReader reader("LayoutConvert", name, attributes);
  if (!reader.has("from")) reader.fail("from", "is required");
  if (!reader.has("to")) reader.fail("to", "is required");
  const ops::TensorLayout from = reader.get_layout("from");
  const ops::TensorLayout to = reader.get_layout("to");
  reader.finish();
  return std::make_unique<LayoutConvertLayer>(name, from, to);
}

core::Shape LayoutConvertLayer::output_shape(const std::vector<core::Shape>& inputs) const {
  const core::Shape& x = inputs.at(0);
  if (x.ndim() != 4) throw_shape_error(*this, layout_dims_text(from_), x);
  const ops::LogicalDims d = ops::logical_dims(from_, x);
  return ops::layout_shape(to_, d.N, d.C, d.H, d.W);
}

void LayoutConvertLayer::forward(const ForwardArgs& args) {
  check_forward(*this, args, 0);
  run_kernel(*this, [&] { ops::convert_layout(*args.output, to_, *args.inputs[0], from_); });
}

void LayoutConvertLayer::backward(const BackwardArgs& args) {
  check_backward(*this, args, 0);
  if (args.input_grads[0] == nullptr) return;
  run_kernel(*this, [&] { ops::convert_layout(*args.input_grads[0], from_, *args.output_grad, to_); });
}

nlohmann::json LayoutConvertLayer::attributes() const {
  return {{"from", ops::layout_name(from_)}, {"to", ops::layout_name(to_)}};
}

}  // namespace dt::nn::layers
