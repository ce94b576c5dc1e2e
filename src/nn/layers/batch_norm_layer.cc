#include "nn/layers/batch_norm_layer.h"

#include <cmath>

namespace dt::nn::layers {

using core::Error;
using core::ErrorCode;

BatchNormLayer::BatchNormLayer(std::string name, const Options& options)
    : Layer(std::move(name)), options_(options) {
  if (!(options_.momentum >= 0.0 && options_.momentum <= 1.0)) {
    throw Error(ErrorCode::kInvalidArgument,
                describe(*this) + ": momentum must be in [0, 1], got " + std::to_string(options_.momentum));
  }
  if (!(std::isfinite(options_.epsilon) && options_.epsilon > 0.0)) {
    throw Error(ErrorCode::kInvalidArgument,
                describe(*this) + ": epsilon must be positive, got " + std::to_string(options_.epsilon));
  }
  if (options_.in_channels < 0) {
    throw Error(ErrorCode::kInvalidArgument, describe(*this) + ": in_channels must be non-negative");
  }
}

std::unique_ptr<Layer> BatchNormLayer::create(const std::string& name, const nlohmann::json& attributes) {
  AttributeReader reader("BatchNorm", name, attributes);
  Options o;
  o.momentum = reader.get_double("momentum", o.momentum);
  o.epsilon = reader.get_double("epsilon", o.epsilon);
  o.in_channels = reader.get_int("in_channels", 0, 0);
  reader.finish();
  return std::make_unique<BatchNormLayer>(name, o);
}

ops::cpu::BatchNormParams BatchNormLayer::params_for(const core::Shape& x) const {
  const std::string rule =
      "(N, C, ...)" + (options_.in_channels != 0 ? " with C=" + std::to_string(options_.in_channels) : "");
  if (x.ndim() < 2 || x.numel() == 0) throw_shape_error(*this, "a non-empty " + rule, x);
  if (options_.in_channels != 0 && x[1] != options_.in_channels) throw_shape_error(*this, rule, x);
  ops::cpu::BatchNormParams p;
  p.N = x[0];
  p.C = x[1];
  // The trailing dims are one spatial extent to the kernel: the same bytes.
  p.H = x.numel() / (p.N * p.C);
  p.W = 1;
  p.eps = static_cast<float>(options_.epsilon);
  p.momentum = static_cast<float>(1.0 - options_.momentum);  // the kernel weighs the batch
  return p;
}

core::Shape BatchNormLayer::output_shape(const std::vector<core::Shape>& inputs) const {
  params_for(inputs.at(0));
  return inputs.at(0);
}

std::vector<ParamSpec> BatchNormLayer::param_specs(const std::vector<core::Shape>& inputs) const {
  const core::Shape c({params_for(inputs.at(0)).C});
  return {{"gamma", c, Initializer{Initializer::Kind::kOnes}},
          {"beta", c, Initializer{Initializer::Kind::kZeros}},
          {"running_mean", c, Initializer{Initializer::Kind::kZeros}, true},
          {"running_var", c, Initializer{Initializer::Kind::kOnes}, true}};
}

ops::cpu::BatchNorm& BatchNormLayer::kernel(const core::Shape& input, const LayerRuntime* runtime) {
  return kernels_.get(input, [&] {
    const ops::cpu::BatchNormParams p = params_for(input);
    return run_kernel(*this, [&] { return ops::cpu::BatchNorm(engine_of(*this, runtime), p); });
  });
}

void BatchNormLayer::forward(const ForwardArgs& args) {
  check_forward(*this, args, 4);
  const core::NDArray& x = *args.inputs[0];
  ops::cpu::BatchNorm& k = kernel(x.shape(), args.runtime);
  const float* gamma = args.params[0]->value.data_as<float>();
  const float* beta = args.params[1]->value.data_as<float>();
  float* running_mean = args.params[2]->value.data_as<float>();
  float* running_var = args.params[3]->value.data_as<float>();
  float* y = args.output->data_as<float>();
  if (!args.train) {
    run_kernel(*this, [&] { k.forward_inference(x.data_as<float>(), gamma, beta, running_mean, running_var, y); });
    return;
  }
  const size_t channels = static_cast<size_t>(x.shape()[1]);
  saved_mean_.resize(channels);
  saved_var_.resize(channels);
  have_saved_ = false;  // stays false if the kernel throws half-way
  run_kernel(*this, [&] {
    k.forward_training(x.data_as<float>(), gamma, beta, y, saved_mean_.data(), saved_var_.data(),
                       running_mean, running_var);
  });
  saved_shape_ = x.shape();
  have_saved_ = true;
}

void BatchNormLayer::backward(const BackwardArgs& args) {
  check_backward(*this, args, 4);
  const core::NDArray& x = *args.inputs[0];
  if (!have_saved_ || saved_shape_ != x.shape()) {
    throw Error(ErrorCode::kBadState, describe(*this) + ": backward needs a training forward on input " +
                                          x.shape().to_string() + " first");
  }
  Parameter& gamma = *args.params[0];
  Parameter& beta = *args.params[1];
  const bool want_params = gamma.grad_req != GradReq::kNull || beta.grad_req != GradReq::kNull;
  if (args.input_grads[0] == nullptr && !want_params) return;
  ops::cpu::BatchNorm& k = kernel(x.shape(), args.runtime);
  float* dx = nullptr;
  if (args.input_grads[0] != nullptr) {
    dx = args.input_grads[0]->data_as<float>();
  } else {
    scratch_dx_.resize(x.size());
    dx = scratch_dx_.data();
  }
  auto compute = [&](float* dgamma, float* dbeta) {
    k.backward(x.data_as<float>(), args.output_grad->data_as<float>(), gamma.value.data_as<float>(),
               saved_mean_.data(), saved_var_.data(), dx, dgamma, dbeta);
  };
  run_kernel(*this, [&] {
    if (want_params) {
      fused_param_grads(gamma, &beta, compute);
    } else {
      scratch_dgamma_.resize(gamma.value.size());
      scratch_dbeta_.resize(beta.value.size());
      compute(scratch_dgamma_.data(), scratch_dbeta_.data());
    }
  });
}

nlohmann::json BatchNormLayer::attributes() const {
  nlohmann::json a = {{"momentum", options_.momentum}, {"epsilon", options_.epsilon}};
  if (options_.in_channels != 0) a["in_channels"] = options_.in_channels;
  return a;
}

}  // namespace dt::nn::layers
