// Gluon's GlobalAvgPool2D: the mean over H and W, (N, C, H, W) -> (N, C, 1, 1).
#pragma once

#include "nn/layer.h"
#include "nn/layers/layer_support.h"

namespace dt::nn::layers {

class GlobalAvgPool2DLayer : public Layer {
 public:
  explicit GlobalAvgPool2DLayer(std::string name) : Layer(std::move(name)) {}
  static std::unique_ptr<Layer> create(const std::string& name, const nlohmann::json& attributes);

  const char* type() const override { return "GlobalAvgPool2D"; }
  core::Shape output_shape(const std::vector<core::Shape>& inputs) const override;
  void forward(const ForwardArgs& args) override;
  void backward(const BackwardArgs& args) override;
};

}  // namespace dt::nn::layers
