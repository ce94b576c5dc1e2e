// Gluon's BatchNorm over axis 1 of (N, C, ...): per-channel statistics over
// N and the trailing dims; with layout "NHWC" (MXNet's name for a 4-d
// layer's channels-last input) over the last axis of (N, ..., C). momentum is Gluon's (running = momentum * running
// + (1 - momentum) * batch); as in PyTorch and the CPU kernel, the running
// variance takes the unbiased batch variance.
//
// Parameters in order: gamma, beta, running_mean, running_var (the last two
// auxiliary). A training forward normalises with the batch statistics,
// keeps them for backward and folds them into the running ones; an inference
// forward uses the running ones.
#pragma once

#include <utility>
#include <vector>

#include "nn/layer.h"
#include "nn/layers/layer_support.h"
#include "ops/batch_norm.h"

namespace dt::nn::layers {

class BatchNormLayer : public Layer {
 public:
  struct Options {
    double momentum = 0.9;
    double epsilon = 1e-5;
    int64_t in_channels = 0;  // 0: inferred from the input
    ops::TensorLayout layout = ops::TensorLayout::kNCHW;
  };

  BatchNormLayer(std::string name, const Options& options);
  static std::unique_ptr<Layer> create(const std::string& name, const nlohmann::json& attributes);

  const char* type() const override { return "BatchNorm"; }
  core::Shape output_shape(const std::vector<core::Shape>& inputs) const override;
  std::vector<ParamSpec> param_specs(const std::vector<core::Shape>& inputs) const override;
  void forward(const ForwardArgs& args) override;
  void backward(const BackwardArgs& args) override;
  nlohmann::json attributes() const override;

 private:
  ops::BatchNormParams params_for(const core::Shape& input) const;
  ops::BatchNorm& kernel(const core::NDArray& input, const LayerRuntime* runtime);

  Options options_;
  KernelCache<ops::BatchNorm> kernels_;
  // Batch statistics of the latest training forward, for backward: float32
  // arrays of C on the input's device.
  core::Shape saved_shape_;
  bool have_saved_ = false;
  bool saved_on_gpu_ = false;
  core::NDArray saved_mean_, saved_var_;
  // Where a training forward on x keeps the batch mean and variance.
  std::pair<float*, float*> saved_statistics(const core::NDArray& x);
};

}  // namespace dt::nn::layers
