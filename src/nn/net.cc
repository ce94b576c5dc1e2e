#include "nn/net.h"

// The Net's construction, settings and replicas; the graph, memory plans,
// execution and parameter files are in net_*.cc beside it.

#include <cmath>

#include "core/error.h"
#include "nn/compute_parameters.h"
#include "nn/layers/softmax_cross_entropy_loss.h"
#include "nn/net_internals.h"
#include "nn/net_layout.h"
#include "ops/cpu/cpu_engine.h"
#include "ops/tensor_math.h"
#if DT_WITH_CUDA
#include "ops/cuda/gradient_cast.h"
#endif

namespace dt::nn {

using core::Error;
using core::ErrorCode;

Net::Net(NetDescription description, std::shared_ptr<core::Context> ctx)
    : description_(std::move(description)), ctx_(std::move(ctx)) {
  if (ctx_ == nullptr) throw Error(ErrorCode::kInvalidArgument, "net: no context");
  // A GPU net still owns a CPU engine: layers take it from the runtime, and a
  // layer without a GPU kernel reports kNotSupported itself, naming the layer.
  engine_ = std::make_unique<ops::cpu::CpuEngine>(ctx_->num_threads());
  runtime_.engine = engine_.get();
  description_ = with_activation_layout(description_, activation_layout_from_environment());
  build_graph();
  create_parameters();
  loss_ = std::make_unique<layers::SoftmaxCrossEntropyLoss>(description_.loss.reduction);
}

Net::~Net() = default;

void Net::initialize(uint64_t seed) {
  // Initialisers draw on the host; a GPU net gets the very same values by
  // filling a host array and copying it over, so CPU and GPU nets with one
  // seed start from identical weights.
  const auto cpu = ctx_->is_cpu() ? ctx_ : core::make_cpu_context();
  for (Parameter& param : params_) {
    if (ctx_->is_cpu()) {
      param.init.fill(param.value, seed, param.name);
      continue;
    }
    const core::NDArray host = core::NDArray::empty(cpu, param.value.dtype(), param.value.shape());
    param.init.fill(host, seed, param.name);
    param.value.copy_from(host);
  }
  runtime_.seed = seed;
  // Dropout masks replay from the seed: initialising again starts them over.
  runtime_.step = 0;
}

size_t Net::param_index(const std::string& name) const {
  for (size_t i = 0; i < params_.size(); ++i) {
    if (params_[i].name == name) return i;
  }
  throw Error(ErrorCode::kNotFound, "net has no parameter " + in_quotes(name));
}

void Net::set_grad_req(const std::string& name, GradReq req) {
  Parameter& param = params_[param_index(name)];
  if (param.auxiliary) {
    throw Error(ErrorCode::kInvalidArgument, in_quotes(name) + " is an auxiliary state and has no gradient");
  }
  param.grad_req = req;
}

void Net::set_grad_req(GradReq req) {
  for (Parameter& param : params_) {
    if (!param.auxiliary) param.grad_req = req;
  }
}

void Net::set_loss_reduction(const std::string& reduction) {
  loss_ = std::make_unique<layers::SoftmaxCrossEntropyLoss>(reduction);
  description_.loss.reduction = reduction;
}

void Net::set_compute_dtype(core::DType dtype) {
  MixedPrecisionPolicy::check_compute_dtype(dtype);
  if (forwarded_) {
    throw Error(ErrorCode::kBadState, "net: set the compute dtype before the first forward");
  }
  MixedPrecisionPolicy::check_supported_on(dtype, *ctx_);
  if (dtype == core::DType::kFloat32) {
    compute_params_.reset();
    for (Node& node : nodes_) node.compute_params.clear();
  } else {
    auto views = std::make_unique<ComputeParameters>(params_, param_in_compute_dtype_, dtype);
    for (Node& node : nodes_) {
      node.compute_params.clear();
      for (const Parameter* p : node.params) {
        node.compute_params.push_back(&views->view(static_cast<size_t>(p - params_.data())));
      }
    }
    compute_params_ = std::move(views);
  }
  precision_.set_compute_dtype(dtype);
}

bool Net::gradients_finite() {
  std::vector<const Parameter*> checked;
  for (const Parameter& p : params_) {
    if (!p.auxiliary && p.grad_req != GradReq::kNull) checked.push_back(&p);
  }
  if (ctx_->is_cpu()) {
    for (const Parameter* p : checked) {
      const float* g = p->grad.data_as<float>();
      for (size_t i = 0; i < p->grad.size(); ++i) {
        if (!std::isfinite(g[i])) return false;
      }
    }
    return true;
  }
#if DT_WITH_CUDA
  if (!nonfinite_flag_.defined()) nonfinite_flag_ = core::NDArray::empty(ctx_, core::DType::kInt32, core::Shape{1});
  ops::fill(nonfinite_flag_, 0.0);
  auto* flag = static_cast<unsigned int*>(nonfinite_flag_.data());
  for (const Parameter* p : checked) ops::cuda::flag_nonfinite(*ctx_, p->grad.data_as<float>(), p->grad.size(), flag);
  int32_t found = 0;
  nonfinite_flag_.copy_to_host(&found, sizeof found);
  return found == 0;
#else
  throw Error(ErrorCode::kInternal, "net: a GPU context in a build without CUDA");
#endif
}

std::unique_ptr<Net> Net::clone(std::shared_ptr<core::Context> ctx) const {
  auto copy = std::make_unique<Net>(description_, std::move(ctx));
  for (size_t i = 0; i < params_.size(); ++i) {
    copy->params_[i].value.copy_from(params_[i].value);
    copy->params_[i].grad_req = params_[i].grad_req;
  }
  copy->runtime_.seed = runtime_.seed;
  // A replica computes as this net does, with a scaler in the same state
  // (a trainer keeps all replicas' scalers in step).
  if (precision_.mixed()) copy->set_compute_dtype(precision_.compute_dtype());
  copy->precision_ = precision_;
  return copy;
}

std::unique_ptr<Net> net_from_json(const std::string& text, std::shared_ptr<core::Context> ctx) {
  return std::make_unique<Net>(parse_net_description(text), std::move(ctx));
}

}  // namespace dt::nn
