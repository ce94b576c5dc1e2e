// Gluon's BatchNorm over axis 1 of (N, C, ...): per-channel statistics over
// N and the trailing dims. momentum is Gluon's (running = momentum * running
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
#include "ops/cpu/batch_norm.h"
#if DT_WITH_CUDA
#include "ops/cuda/batch_norm.h"
#endif

namespace dt::nn::layers {

class BatchNormLayer : public Layer {
 public:
  struct Options {
    double momentum = 0.9;
    double epsilon = 1e-5;
    int64_t in_channels = 0;  // 0: inferred from the input
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
  ops::cpu::BatchNormParams params_for(const core::Shape& input) const;
  ops::cpu::BatchNorm& kernel(const core::Shape& input, const LayerRuntime* runtime);

  Options options_;
  ShapeCache<ops::cpu::BatchNorm> kernels_;
  // Batch statistics of the latest training forward, for backward.
  core::Shape saved_shape_;
  bool have_saved_ = false;
  bool saved_on_gpu_ = false;  // which of the two sets below holds them
  std::vector<float> saved_mean_, saved_var_;
  // Where a training forward on x keeps the batch mean and variance for
  // backward: the host vectors, or arrays on x's GPU.
  std::pair<float*, float*> saved_statistics(const core::NDArray& x);
  // Where unwanted gradients go: the kernel computes dx, dgamma and dbeta
  // in one call.
  std::vector<float> scratch_dx_, scratch_dgamma_, scratch_dbeta_;
#if DT_WITH_CUDA
  void backward_gpu(const BackwardArgs& args);
  GpuShapeCache<ops::cuda::BatchNorm> gpu_kernels_;
  core::NDArray gpu_saved_mean_, gpu_saved_var_;  // on the input's GPU
#endif
};

}  // namespace dt::nn::layers
