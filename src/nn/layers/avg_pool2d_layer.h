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
  ops::cpu::AvgPool2D& kernel(const core::Shape& input, const LayerRuntime* runtime);

  bool count_include_pad_;
  ShapeCache<ops::cpu::AvgPool2D> kernels_;
#if DT_WITH_CUDA
  ops::cuda::AvgPool2D& gpu_kernel(const core::NDArray& input);
  GpuShapeCache<ops::cuda::AvgPool2D> gpu_kernels_;
#endif
};

}  // namespace dt::nn::layers
