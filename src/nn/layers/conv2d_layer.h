// Gluon's Conv2D with OIHW weights (K, C/groups, R, S) over NCHW, or over
// NHWC with layout "NHWC" (MXNet's attribute: input (N, H, W, C), output
// (N, P, Q, K); the weights stay OIHW, so parameters, checkpoints and
// kvstores see the same arrays in either layout). in_channels comes from
// the input shape unless the description fixes it.
#pragma once

#include "nn/layer.h"
#include "nn/layers/layer_support.h"
#include "ops/conv2d.h"

namespace dt::nn::layers {

class Conv2DLayer : public Layer {
 public:
  struct Options {
    int64_t channels = 0;
    std::pair<int64_t, int64_t> kernel_size{0, 0};
    std::pair<int64_t, int64_t> strides{1, 1};
    std::pair<int64_t, int64_t> padding{0, 0};
    std::pair<int64_t, int64_t> dilation{1, 1};
    int64_t groups = 1;
    int64_t in_channels = 0;  // 0: inferred from the input
    bool use_bias = true;
    ops::TensorLayout layout = ops::TensorLayout::kNCHW;
    // Glorot, MXNet's mx.init.Xavier() as Gluon's examples use it. He's
    // scale (kaiming, gain sqrt(2)) preserves the variance through ReLUs but
    // is 2-5x larger for these fans and, on inputs that are not normalised,
    // made LeNet's ReLUs die in the first SGD steps where Glorot trains;
    // PyTorch's own default is smaller still. A description that wants He
    // says so in weight_initializer.
    Initializer weight_init{Initializer::Kind::kXavierUniform};
    Initializer bias_init{Initializer::Kind::kZeros};
  };

  Conv2DLayer(std::string name, const Options& options);
  static std::unique_ptr<Layer> create(const std::string& name, const nlohmann::json& attributes);

  const char* type() const override { return "Conv2D"; }
  core::Shape output_shape(const std::vector<core::Shape>& inputs) const override;
  std::vector<ParamSpec> param_specs(const std::vector<core::Shape>& inputs) const override;
  void forward(const ForwardArgs& args) override;
  void backward(const BackwardArgs& args) override;
  nlohmann::json attributes() const override;

 private:
  // The kernel's parameters for an input, after checking it.
  ops::Conv2DParams params_for(const core::Shape& input) const;
  // Error(kNotSupported) on a GPU in a build without cuDNN.
  ops::Conv2D& kernel(const core::NDArray& input, const LayerRuntime* runtime);

  Options options_;
  KernelCache<ops::Conv2D> kernels_;
};

}  // namespace dt::nn::layers
