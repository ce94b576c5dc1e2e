#include "nn/layers/activation_layer.h"

#include <cstring>

namespace dt::nn::layers {
namespace {

struct ActName {
  ops::Activation kind;
  const char* name;
};

constexpr ActName kActNames[] = {
    {ops::Activation::kRelu, "relu"},
    {ops::Activation::kSigmoid, "sigmoid"},
    {ops::Activation::kTanh, "tanh"},
};

const char* act_name(ops::Activation kind) {
  for (const ActName& entry : kActNames) {
    if (entry.kind == kind) return entry.name;
  }
  throw core::Error(core::ErrorCode::kInternal, "unknown activation kind");
}

// The fixed-function types take no attributes; still reject any, so that a
// stray key does not pass unnoticed.
std::unique_ptr<Layer> create_fixed(const char* type, ops::Activation kind, const std::string& name,
                                    const nlohmann::json& attributes) {
  AttributeReader(type, name, attributes).finish();
  return std::make_unique<ActivationLayer>(name, kind, type);
}

}  // namespace

ActivationLayer::ActivationLayer(std::string name, ops::Activation kind, const char* type)
    : Layer(std::move(name)), kind_(kind), type_(type) {}

std::unique_ptr<Layer> ActivationLayer::create_relu(const std::string& name, const nlohmann::json& attributes) {
  return create_fixed("ReLU", ops::Activation::kRelu, name, attributes);
}

std::unique_ptr<Layer> ActivationLayer::create_sigmoid(const std::string& name,
                                                       const nlohmann::json& attributes) {
  return create_fixed("Sigmoid", ops::Activation::kSigmoid, name, attributes);
}

std::unique_ptr<Layer> ActivationLayer::create_tanh(const std::string& name, const nlohmann::json& attributes) {
  return create_fixed("Tanh", ops::Activation::kTanh, name, attributes);
}

std::unique_ptr<Layer> ActivationLayer::create_activation(const std::string& name,
                                                          const nlohmann::json& attributes) {
  AttributeReader reader("Activation", name, attributes);
  if (!reader.has("act_type")) reader.fail("act_type", "is required (relu, sigmoid or tanh)");
  const std::string act_type = reader.get_string("act_type", "");
  reader.finish();
  for (const ActName& entry : kActNames) {
    if (act_type == entry.name) return std::make_unique<ActivationLayer>(name, entry.kind, "Activation");
  }
  reader.fail("act_type", "must be relu, sigmoid or tanh, got \"" + act_type + "\"");
}

core::Shape ActivationLayer::output_shape(const std::vector<core::Shape>& inputs) const {
  const core::Shape& x = inputs.at(0);
  if (x.numel() == 0) throw_shape_error(*this, "a non-empty array", x);
  return x;
}

ops::Eltwise& ActivationLayer::kernel(const core::NDArray& input, const LayerRuntime* runtime) {
  return kernels_.get(input, [&] {
    const ops::Target target = target_of(*this, input, runtime);
    return run_kernel(*this, [&] { return ops::make_eltwise(target, kind_, input.shape().numel()); });
  });
}

void ActivationLayer::forward(const ForwardArgs& args) {
  check_forward(*this, args, 0);
  const core::NDArray& x = *args.inputs[0];
  ops::Eltwise& k = kernel(x, args.runtime);
  run_kernel(*this, [&] { k.forward(x.data(), args.output->data()); });
}

void ActivationLayer::backward(const BackwardArgs& args) {
  check_backward(*this, args, 0);
  if (args.input_grads[0] == nullptr) return;
  if (args.output == nullptr || args.output->shape() != args.output_grad->shape()) {
    throw core::Error(core::ErrorCode::kInvalidArgument,
                      describe(*this) + ": backward needs the forward output, of the output gradient's shape");
  }
  check_float_on(*this, *args.output, "output", *args.inputs[0]->context(), args.inputs[0]->dtype());
  ops::Eltwise& k = kernel(*args.inputs[0], args.runtime);
  run_kernel(*this, [&] { k.backward(args.output->data(), args.output_grad->data(), args.input_grads[0]->data()); });
}

nlohmann::json ActivationLayer::attributes() const {
  if (std::strcmp(type_, "Activation") == 0) return {{"act_type", act_name(kind_)}};
  return nlohmann::json::object();
}

}  // namespace dt::nn::layers
