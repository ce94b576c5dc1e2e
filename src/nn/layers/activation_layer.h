// Element-wise activations: "ReLU", "Sigmoid", "Tanh", and Gluon's
// "Activation" with act_type relu|sigmoid|tanh, all one class since they
// differ only in the kernel's function. Backward reads the forward output.
#pragma once

#include "nn/layer.h"
#include "nn/layers/layer_support.h"
#include "ops/eltwise.h"

namespace dt::nn::layers {

class ActivationLayer : public Layer {
 public:
  // type: the JSON type this layer was made as, kept so that a description
  // written back says "ReLU" where it said "ReLU". Must be a string literal
  // or otherwise outlive the layer.
  ActivationLayer(std::string name, ops::Activation kind, const char* type);

  static std::unique_ptr<Layer> create_relu(const std::string& name, const nlohmann::json& attributes);
  static std::unique_ptr<Layer> create_sigmoid(const std::string& name, const nlohmann::json& attributes);
  static std::unique_ptr<Layer> create_tanh(const std::string& name, const nlohmann::json& attributes);
  static std::unique_ptr<Layer> create_activation(const std::string& name,
                                                  const nlohmann::json& attributes);

  const char* type() const override { return type_; }
  core::Shape output_shape(const std::vector<core::Shape>& inputs) const override;
  void forward(const ForwardArgs& args) override;
  void backward(const BackwardArgs& args) override;
  nlohmann::json attributes() const override;

 private:
  ops::Eltwise& kernel(const core::NDArray& input, const LayerRuntime* runtime);

  ops::Activation kind_;
  const char* type_;
  KernelCache<ops::Eltwise> kernels_;
};

}  // namespace dt::nn::layers
