// Gluon's Flatten: (N, ...) -> (N, prod(...)). The bytes do not move; the
// layer copies because Net gives every layer its own output array.
#pragma once

#include "nn/layer.h"
#include "nn/layers/layer_support.h"

namespace dt::nn::layers {

class FlattenLayer : public Layer {
 public:
  explicit FlattenLayer(std::string name) : Layer(std::move(name)) {}
  static std::unique_ptr<Layer> create(const std::string& name, const nlohmann::json& attributes);

  const char* type() const override { return "Flatten"; }
  core::Shape output_shape(const std::vector<core::Shape>& inputs) const override;
  void forward(const ForwardArgs& args) override;
  void backward(const BackwardArgs& args) override;
};

}  // namespace dt::nn::layers
