// Gluon's MaxPool2D over NCHW; padding never wins the max.
#pragma once

#include "nn/layers/pool2d_layer.h"

namespace dt::nn::layers {

class MaxPool2DLayer : public Pool2DLayer {
 public:
  MaxPool2DLayer(std::string name, const Window& window);
  static std::unique_ptr<Layer> create(const std::string& name, const nlohmann::json& attributes);

  const char* type() const override { return "MaxPool2D"; }
  void forward(const ForwardArgs& args) override;
  void backward(const BackwardArgs& args) override;

 private:
  KernelCache<ops::MaxPool2D> kernels_;
  // Whether the latest forward recorded an argmax: after an inference
  // forward the kernel still holds an older batch's. And on which device:
  // each kernel keeps its own.
  bool argmax_current_ = false;
  bool argmax_on_gpu_ = false;
  core::Shape argmax_shape_;
};

}  // namespace dt::nn::layers
