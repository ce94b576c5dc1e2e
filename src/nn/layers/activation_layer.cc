#include "nn/layers/activation_layer.h"

#include <cstring>

namespace dt::nn::layers {
namespace {

struct ActName {
  ops::cpu::Activation kind;
  const char* name;
};

constexpr ActName kActNames[] = {
    {ops::cpu::Activation::kRelu, "relu"},
    {ops::cpu::Activation::kSigmoid, "sigmoid"},
    {ops::cpu::Activation::kTanh, "tanh"},
};

const char* act_name(ops::cpu::Activation kind) {
  for (const ActName& entry : kActNames) {
    if (entry.kind == kind) return entry.name;
  }
  throw core::Error(core::ErrorCode::kInternal, "unknown activation kind");
}

// The fixed-function types take no attributes; still reject any, so that a
// stray key does not pass unnoticed.
std::unique_ptr<Layer> create_fixed(const char* type, ops::cpu::Activation kind, const std::string& name,
                                    const nlohmann::json& attributes) {
  AttributeReader(type, name, attributes).finish();
  return std::make_unique<ActivationLayer>(name, kind, type);
}

}  // namespace

ActivationLayer::ActivationLayer(std::string name, ops::cpu::Activation kind, const char* type)
    : Layer(std::move(name)), kind_(kind), type_(type) {}

std::unique_ptr<Layer> ActivationLayer::create_relu(const std::string& name, const nlohmann::json& attributes) {
  return create_fixed("ReLU", ops::cpu::Activation::kRelu, name, attributes);
}

std::unique_ptr<Layer> ActivationLayer::create_sigmoid(const std::string& name,
                                                       const nlohmann::json& attributes) {
  return create_fixed("Sigmoid", ops::cpu::Activation::kSigmoid, name, attributes);
}

std::unique_ptr<Layer> ActivationLayer::create_tanh(const std::string& name, const nlohmann::json& attributes) {
  return create_fixed("Tanh", ops::cpu::Activation::kTanh, name, attributes);
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

ops::cpu::Eltwise& ActivationLayer::kernel(const core::Shape& input, const LayerRuntime* runtime) {
  return kernels_.get(input, [&] {
    return run_kernel(*this, [&] { return ops::cpu::Eltwise(engine_of(*this, runtime), kind_, input.numel()); });
  });
}

#if DT_WITH_CUDA
ops::cuda::Eltwise& ActivationLayer::gpu_kernel(const core::NDArray& input) {
  return gpu_kernels_.get(
      input.context(), input.shape(),
      [&] {
        return run_kernel(*this,
                          [&] { return ops::cuda::Eltwise(input.context(), kind_, input.shape().numel(), input.dtype()); });
      },
      input.dtype());
}
#endif

void ActivationLayer::forward(const ForwardArgs& args) {
  check_forward(*this, args, 0);
  const core::NDArray& x = *args.inputs[0];
#if DT_WITH_CUDA
  if (on_gpu(x)) {
    ops::cuda::Eltwise& k = gpu_kernel(x);
    run_kernel(*this, [&] { k.forward(x.data(), args.output->data()); });
    return;
  }
#endif
  ops::cpu::Eltwise& k = kernel(x.shape(), args.runtime);
  run_kernel(*this, [&] { k.forward(x.data_as<float>(), args.output->data_as<float>()); });
}

void ActivationLayer::backward(const BackwardArgs& args) {
  check_backward(*this, args, 0);
  if (args.input_grads[0] == nullptr) return;
  if (args.output == nullptr || args.output->shape() != args.output_grad->shape()) {
    throw core::Error(core::ErrorCode::kInvalidArgument,
                      describe(*this) + ": backward needs the forward output, of the output gradient's shape");
  }
  check_float_on(*this, *args.output, "output", *args.inputs[0]->context(), args.inputs[0]->dtype());
#if DT_WITH_CUDA
  if (on_gpu(*args.inputs[0])) {
    ops::cuda::Eltwise& k = gpu_kernel(*args.inputs[0]);
    run_kernel(*this, [&] {
      k.backward(args.output->data(), args.output_grad->data(), args.input_grads[0]->data());
    });
    return;
  }
#endif
  ops::cpu::Eltwise& k = kernel(args.inputs[0]->shape(), args.runtime);
  run_kernel(*this, [&] {
    k.backward(args.output->data_as<float>(), args.output_grad->data_as<float>(),
               args.input_grads[0]->data_as<float>());
  });
}

nlohmann::json ActivationLayer::attributes() const {
  if (std::strcmp(type_, "Activation") == 0) return {{"act_type", act_name(kind_)}};
  return nlohmann::json::object();
}

}  // namespace dt::nn::layers
