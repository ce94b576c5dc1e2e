// Gluon's GlobalAvgPool2D: the mean over H and W, (N, C, H, W) -> (N, C, 1, 1),
// or with layout "NHWC" (N, H, W, C) -> (N, 1, 1, C): the same bytes, so
// what follows (Flatten, Dense) sees one result in either layout.
#pragma once

#include "nn/layer.h"
#include "nn/layers/layer_support.h"

namespace dt::nn::layers {

class GlobalAvgPool2DLayer : public Layer {
 public:
  explicit GlobalAvgPool2DLayer(std::string name, ops::TensorLayout layout = ops::TensorLayout::kNCHW)
      : Layer(std::move(name)), layout_(layout) {}
  static std::unique_ptr<Layer> create(const std::string& name, const nlohmann::json& attributes);

  const char* type() const override { return "GlobalAvgPool2D"; }
  core::Shape output_shape(const std::vector<core::Shape>& inputs) const override;
  void forward(const ForwardArgs& args) override;
  void backward(const BackwardArgs& args) override;
  nlohmann::json attributes() const override;

 private:
  ops::TensorLayout layout_;
};

}  // namespace dt::nn::layers
