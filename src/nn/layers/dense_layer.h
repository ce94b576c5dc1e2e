// Gluon's Dense: y = x W^T + b, with W (units, in_units). in_units comes from
// the input shape (Gluon's deferred initialisation) unless the description
// fixes it. flatten=true reads (N, ...) as (N, prod(...)); flatten=false
// applies the layer to the last axis, keeping the leading ones.
#pragma once

#include "nn/layer.h"
#include "nn/layers/layer_support.h"
#include "ops/inner_product.h"

namespace dt::nn::layers {

class DenseLayer : public Layer {
 public:
  struct Options {
    int64_t units = 0;
    int64_t in_units = 0;  // 0: inferred from the input
    bool use_bias = true;
    bool flatten = true;
    // Glorot, as MXNet's mx.init.Xavier() that Gluon examples pass: the
    // layer's output usually feeds a softmax or another Dense, not a ReLU
    // that would call for He's gain.
    Initializer weight_init{Initializer::Kind::kXavierUniform};
    Initializer bias_init{Initializer::Kind::kZeros};
  };

  DenseLayer(std::string name, const Options& options);
  static std::unique_ptr<Layer> create(const std::string& name, const nlohmann::json& attributes);

  const char* type() const override { return "Dense"; }
  core::Shape output_shape(const std::vector<core::Shape>& inputs) const override;
  std::vector<ParamSpec> param_specs(const std::vector<core::Shape>& inputs) const override;
  void forward(const ForwardArgs& args) override;
  void backward(const BackwardArgs& args) override;
  nlohmann::json attributes() const override;

 private:
  // (rows, in) as the inner product sees the input.
  std::pair<int64_t, int64_t> matrix_of(const core::Shape& input) const;
  ops::InnerProduct& kernel(const core::NDArray& input, const LayerRuntime* runtime);

  Options options_;
  KernelCache<ops::InnerProduct> kernels_;
};

}  // namespace dt::nn::layers
