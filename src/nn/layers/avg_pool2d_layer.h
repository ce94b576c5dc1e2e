// Gluon's AvgPool2D over NCHW. count_include_pad (default true, as Gluon and
// PyTorch) divides by the full window where it overlaps the padding.
#pragma once

#include "nn/layers/pool2d_layer.h"

namespace dt::nn::layers {

class AvgPool2DLayer : public Pool2DLayer {
 public:
  AvgPool2DLayer(std::string name, const Window& window, bool count_include_pad);
  static std::unique_ptr<Layer> create(const std::string& name, const nlohmann::json& attributes);

  const char* type() const override { return "AvgPool2D"; }
  void forward(const ForwardArgs& args) override;
  void backward(const BackwardArgs& args) override;
  nlohmann::json attributes() const override;

 private:
  ops::AvgPool2D& kernel(const core::NDArray& input, const LayerRuntime* runtime);

  bool count_include_pad_;
  KernelCache<ops::AvgPool2D> kernels_;
};

}  // namespace dt::nn::layers
