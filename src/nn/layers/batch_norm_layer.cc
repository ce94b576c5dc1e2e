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
  o.layout = reader.get_layout("layout");
  reader.finish();
  return std::make_unique<BatchNormLayer>(name, o);
}

ops::BatchNormParams BatchNormLayer::params_for(const core::Shape& x) const {
  const bool nhwc = options_.layout == ops::TensorLayout::kNHWC;
  const std::string rule = (nhwc ? "(N, ..., C)" : "(N, C, ...)") +
                           (options_.in_channels != 0 ? " with C=" + std::to_string(options_.in_channels) : "");
  if (x.ndim() < 2 || x.numel() == 0) throw_shape_error(*this, "a non-empty " + rule, x);
  const int64_t channels = x[nhwc ? x.ndim() - 1 : 1];
  if (options_.in_channels != 0 && channels != options_.in_channels) throw_shape_error(*this, rule, x);
  ops::BatchNormParams p;
  p.N = x[0];
  p.C = channels;
  p.layout = options_.layout;
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

ops::BatchNorm& BatchNormLayer::kernel(const core::NDArray& input, const LayerRuntime* runtime) {
  return kernels_.get(input, [&] {
    const ops::BatchNormParams p = params_for(input.shape());
    const ops::Target target = target_of(*this, input, runtime);
    return run_kernel(*this, [&] { return ops::make_batch_norm(target, p); });
  });
}

void BatchNormLayer::forward(const ForwardArgs& args) {
  check_forward(*this, args, 4);
  const core::NDArray& x = *args.inputs[0];
  const float* gamma = args.params[0]->value.data_as<float>();
  const float* beta = args.params[1]->value.data_as<float>();
  float* running_mean = args.params[2]->value.data_as<float>();
  float* running_var = args.params[3]->value.data_as<float>();
  void* y = args.output->data();
  ops::BatchNorm& k = kernel(x, args.runtime);
  if (!args.train) {
    run_kernel(*this, [&] { k.forward_inference(x.data(), gamma, beta, running_mean, running_var, y); });
    return;
  }
  have_saved_ = false;  // stays false if the kernel throws half-way
  const auto [saved_mean, saved_var] = saved_statistics(x);
  run_kernel(*this, [&, saved_mean = saved_mean, saved_var = saved_var] {
    k.forward_training(x.data(), gamma, beta, y, saved_mean, saved_var, running_mean, running_var);
  });
  saved_shape_ = x.shape();
  saved_on_gpu_ = on_gpu(x);
  have_saved_ = true;
}

std::pair<float*, float*> BatchNormLayer::saved_statistics(const core::NDArray& x) {
  const core::Shape shape({params_for(x.shape()).C});
  if (!saved_mean_.defined() || saved_mean_.shape() != shape || saved_mean_.context() != x.context()) {
    saved_mean_ = core::NDArray::empty(x.context(), core::DType::kFloat32, shape);
    saved_var_ = core::NDArray::empty(x.context(), core::DType::kFloat32, shape);
  }
  return {saved_mean_.data_as<float>(), saved_var_.data_as<float>()};
}

void BatchNormLayer::backward(const BackwardArgs& args) {
  check_backward(*this, args, 4);
  const core::NDArray& x = *args.inputs[0];
  const bool gpu = on_gpu(x);
  if (!have_saved_ || saved_shape_ != x.shape() || saved_on_gpu_ != gpu) {
    throw Error(ErrorCode::kBadState, describe(*this) + ": backward needs a training forward on input " +
                                          x.shape().to_string() + " first");
  }
  Parameter& gamma = *args.params[0];
  Parameter& beta = *args.params[1];
  const bool want_params = gamma.grad_req != GradReq::kNull || beta.grad_req != GradReq::kNull;
  if (args.input_grads[0] == nullptr && !want_params) return;
  // A GPU kernel is bound to the context and dtype of its forward, which
  // must be this call's; a CPU kernel may be rebuilt (the statistics are
  // kept here, not in it).
  ops::BatchNorm* k = gpu ? kernels_.find(x) : &kernel(x, args.runtime);
  if (k == nullptr) {
    throw Error(ErrorCode::kBadState,
                describe(*this) + ": backward needs a training forward on " + x.context()->to_string() + " first");
  }
  // The kernel writes dx, dgamma and dbeta together; those not wanted go to
  // scratch arrays on the same device.
  core::NDArray scratch_dx, scratch_dgamma, scratch_dbeta;
  void* dx = nullptr;
  if (args.input_grads[0] != nullptr) {
    dx = args.input_grads[0]->data();
  } else {
    scratch_dx = core::NDArray::empty(x.context(), x.dtype(), x.shape());
    dx = scratch_dx.data();
  }
  auto compute = [&](KernelData dgamma, KernelData dbeta) {
    k->backward(x.data(), args.output_grad->data(), gamma.value.data_as<float>(), saved_mean_.data_as<float>(),
                saved_var_.data_as<float>(), dx, dgamma, dbeta);
  };
  run_kernel(*this, [&] {
    if (want_params) {
      fused_param_grads(gamma, &beta, compute);
    } else {
      scratch_dgamma = core::NDArray::empty(x.context(), core::DType::kFloat32, gamma.value.shape());
      scratch_dbeta = core::NDArray::empty(x.context(), core::DType::kFloat32, beta.value.shape());
      compute(KernelData(scratch_dgamma), KernelData(scratch_dbeta));
    }
  });
}

nlohmann::json BatchNormLayer::attributes() const {
  nlohmann::json a = {{"momentum", options_.momentum}, {"epsilon", options_.epsilon}};
  if (options_.in_channels != 0) a["in_channels"] = options_.in_channels;
  add_layout_attribute(a, options_.layout);
  return a;
}

}  // namespace dt::nn::layers
