// Element-wise sum of two inputs of equal shape: the join of a residual
// block. Each input's gradient is the output gradient.
#pragma once

#include "nn/layer.h"
#include "nn/layers/layer_support.h"

namespace dt::nn::layers {

class AddLayer : public Layer {
 public:
  explicit AddLayer(std::string name) : Layer(std::move(name)) {}
  static std::unique_ptr<Layer> create(const std::string& name, const nlohmann::json& attributes);

  const char* type() const override { return "Add"; }
  size_t num_inputs() const override { return 2; }
  core::Shape output_shape(const std::vector<core::Shape>& inputs) const override;
  void forward(const ForwardArgs& args) override;
  void backward(const BackwardArgs& args) override;
};

}  // namespace dt::nn::layers
