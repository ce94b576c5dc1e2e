// Moves a 4-d activation from one layout to the other (ops/layout_convert.h):
// (N, C, H, W) <-> (N, H, W, C). What a net whose 4-d layers run in NHWC
// (nn/net_layout.h) puts at its input and before its first layer that reads
// NCHW; its backward converts the gradient back. Attributes "from" and "to",
// each "NCHW" or "NHWC". No parameters.
#pragma once

#include "nn/layer.h"
#include "nn/layers/layer_support.h"
#include "ops/tensor_layout.h"

namespace dt::nn::layers {

class LayoutConvertLayer : public Layer {
 public:
  LayoutConvertLayer(std::string name, ops::TensorLayout from, ops::TensorLayout to)
      : Layer(std::move(name)), from_(from), to_(to) {}
  static std::unique_ptr<Layer> create(const std::string& name, const nlohmann::json& attributes);

  const char* type() const override { return "LayoutConvert"; }
  core::Shape output_shape(const std::vector<core::Shape>& inputs) const override;
  void forward(const ForwardArgs& args) override;
  void backward(const BackwardArgs& args) override;
  nlohmann::json attributes() const override;

 private:
  ops::TensorLayout from_, to_;
};

}  // namespace dt::nn::layers
