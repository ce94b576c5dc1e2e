#include "nn/net.h"

// Net: forward, the loss and backward over the graph, with the casts
// mixed precision adds.

#include <algorithm>

#include "core/timeline/timeline.h"
#include "nn/compute_parameters.h"
#include "nn/layers/softmax_cross_entropy_loss.h"
#include "nn/net_internals.h"
#include "ops/cpu/cpu_engine.h"
#include "ops/tensor_math.h"

namespace dt::nn {

using core::Error;
using core::ErrorCode;

namespace {

// Whether an array on `at` may feed a net on `net`: its own device, or host
// memory that the net copies to its GPU (what a data loader hands out).
bool usable_on(const core::Context& at, const core::Context& net) { return core::same_device(at, net) || at.is_cpu(); }

// `array` on ctx: the array itself when it is there, else a copy into
// `staging`, which is kept for the next call of the same shape and dtype.
core::NDArray staged_on(const core::NDArray& array, const std::shared_ptr<core::Context>& ctx,
                        core::NDArray& staging) {
  if (core::same_device(*array.context(), *ctx)) {
    // Another context of this GPU queues on its own stream: what it still
    // has to write into the array must land before this net's stream reads.
    if (array.context() != ctx && !array.context()->is_cpu()) array.context()->synchronize();
    return array;
  }
  if (!staging.defined() || staging.shape() != array.shape() || staging.dtype() != array.dtype()) {
    staging = core::NDArray::empty(ctx, array.dtype(), array.shape());
  }
  staging.copy_from(array);
  return staging;
}

std::string batched_text(const core::Shape& sample) {
  std::string text = "(batch";
  for (size_t i = 0; i < sample.ndim(); ++i) text += ", " + std::to_string(sample[i]);
  return text + ")";
}

}  // namespace

void Net::forward(const std::vector<core::NDArray>& inputs, bool train) {
  const core::timeline::Span span("train", "forward");
  const auto& specs = description_.inputs;
  if (inputs.size() != specs.size()) {
    throw Error(ErrorCode::kInvalidArgument, "net takes " + std::to_string(specs.size()) + " input(s), got " +
                                                 std::to_string(inputs.size()));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    const core::NDArray& input = inputs[i];
    const std::string what = "input " + in_quotes(specs[i].name);
    if (!input.defined()) throw Error(ErrorCode::kInvalidArgument, what + " is not allocated");
    if (input.dtype() != core::DType::kFloat32) {
      throw Error(ErrorCode::kDtypeMismatch,
                  what + " must be float32, got " + core::dtype_name(input.dtype()));
    }
    if (!usable_on(*input.context(), *ctx_)) {
      throw Error(ErrorCode::kInvalidArgument,
                  what + " is on " + input.context()->to_string() + ", the net on " + ctx_->to_string());
    }
    const core::Shape& shape = input.shape();
    bool ok = shape.ndim() == specs[i].shape.ndim() + 1 && shape[0] > 0;
    for (size_t d = 0; ok && d < specs[i].shape.ndim(); ++d) ok = shape[d + 1] == specs[i].shape[d];
    if (!ok) {
      throw Error(ErrorCode::kShapeMismatch, what + " has shape " + shape.to_string() + ", expected " +
                                                 batched_text(specs[i].shape) + " with batch >= 1");
    }
    if (shape[0] != inputs[0].shape()[0]) {
      throw Error(ErrorCode::kShapeMismatch, what + " has batch size " + std::to_string(shape[0]) + ", input " +
                                                 in_quotes(specs[0].name) + " has " +
                                                 std::to_string(inputs[0].shape()[0]));
    }
  }

  Plan& plan = plan_for(inputs);
  forwarded_ = true;
  plan.staged_inputs.resize(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    plan.values[i] = staged_on(inputs[i], ctx_, plan.staged_inputs[i]);
    if (mixed_precision()) {
      ops::cast(plan.cast_inputs[i], plan.values[i]);
      plan.values[i] = plan.cast_inputs[i];
    }
  }
  // Every forward casts the masters again, as PyTorch's autocast does: they
  // may have been written from anywhere (an optimizer, a kvstore pull, a
  // dt_net_param handle), and one cast reads each weight once, little
  // beside the forward itself.
  if (mixed_precision()) compute_params_->refresh_values();
  last_forward_ = nullptr;  // until this forward has completed
  // Counted before the layers run, so a backward sees the step its forward saw.
  ++runtime_.step;
  engine_->bind_current_thread();
  const size_t num_inputs = inputs.size();
  for (size_t k = 0; k < nodes_.size(); ++k) {
    Node& node = nodes_[k];
    ForwardArgs args;
    for (size_t v : node.inputs) args.inputs.push_back(&plan.values[v]);
    args.params = layer_params(node);
    args.output = &plan.values[num_inputs + k];
    args.train = train;
    args.runtime = &runtime_;
    in_layer(*node.layer, [&] {
      const auto layer_span = core::timeline::layer_span("train", node.layer->name());
      node.layer->forward(args);
    });
  }
  if (mixed_precision()) ops::cast(plan.logits32, plan.values[output_value_]);
  last_forward_ = &plan;
}

const std::vector<Parameter*>& Net::layer_params(const Node& node) const {
  return mixed_precision() ? node.compute_params : node.params;
}

double Net::backward(const core::NDArray& labels) { return backward(labels, nullptr); }

core::NDArray Net::labels_for_last_forward(const core::NDArray& labels, const char* call) {
  if (last_forward_ == nullptr) {
    throw Error(ErrorCode::kBadState, std::string("net: ") + call + " needs a completed forward first");
  }
  Plan& plan = *last_forward_;
  if (!labels.defined()) throw Error(ErrorCode::kInvalidArgument, "labels are not allocated");
  if (labels.dtype() != core::DType::kInt32 && labels.dtype() != core::DType::kInt64) {
    throw Error(ErrorCode::kDtypeMismatch,
                std::string("labels must be int32 or int64, got ") + core::dtype_name(labels.dtype()));
  }
  if (labels.shape() != core::Shape{plan.batch}) {
    throw Error(ErrorCode::kShapeMismatch, "labels have shape " + labels.shape().to_string() + ", expected (" +
                                               std::to_string(plan.batch) + ") for the batch of the last forward");
  }
  if (!usable_on(*labels.context(), *ctx_)) {
    throw Error(ErrorCode::kInvalidArgument,
                "labels are on " + labels.context()->to_string() + ", the net on " + ctx_->to_string());
  }
  return staged_on(labels, ctx_, plan.staged_labels);
}

double Net::loss(const core::NDArray& labels) {
  const core::NDArray device_labels = labels_for_last_forward(labels, "loss");
  return loss_->forward_backward(output(0), device_labels, nullptr);
}

double Net::backward(const core::NDArray& labels, const GradientReady& on_gradient_ready) {
  const core::timeline::Span span("train", "backward");
  const core::NDArray device_labels = labels_for_last_forward(labels, "backward");
  Plan& plan = *last_forward_;
  if (!plan.have_grads) allocate_gradients(plan);

  engine_->bind_current_thread();
  double loss = 0.0;
  float unscale = 1.0f;
  if (mixed_precision()) {
    // The loss in float32 from the float32 logits; its gradient times the
    // loss scale, then down to the compute dtype (where a too-large scale
    // overflows to inf, which gradients_finite() reports).
    const double scale = precision_.loss_scaler().scale();
    unscale = static_cast<float>(1.0 / scale);
    loss = loss_->forward_backward(plan.logits32, device_labels, &plan.dlogits32, static_cast<float>(scale));
    ops::cast(plan.grads[output_value_], plan.dlogits32);
    compute_params_->sync_grad_reqs();
  } else {
    loss = loss_->forward_backward(plan.values[output_value_], device_labels, &plan.grads[output_value_]);
  }

  const size_t num_inputs = description_.inputs.size();
  for (size_t k = nodes_.size(); k-- > 0;) {
    Node& node = nodes_[k];
    const bool wants_input_grad = std::any_of(node.routes.begin(), node.routes.end(),
                                              [](GradRoute r) { return r != GradRoute::kNone; });
    const bool wants_param_grad = std::any_of(node.params.begin(), node.params.end(),
                                              [](const Parameter* p) { return p->grad_req != GradReq::kNull; });
    if (!wants_input_grad && !wants_param_grad) continue;  // e.g. a frozen first layer
    BackwardArgs args;
    for (size_t v : node.inputs) args.inputs.push_back(&plan.values[v]);
    args.output = &plan.values[num_inputs + k];
    args.output_grad = &plan.grads[num_inputs + k];
    for (size_t j = 0; j < node.inputs.size(); ++j) {
      switch (node.routes[j]) {
        case GradRoute::kNone: args.input_grads.push_back(nullptr); break;
        case GradRoute::kWrite: args.input_grads.push_back(&plan.grads[node.inputs[j]]); break;
        case GradRoute::kAccumulate: args.input_grads.push_back(&plan.scratch[k][j]); break;
      }
    }
    args.params = layer_params(node);
    args.runtime = &runtime_;
    in_layer(*node.layer, [&] {
      const auto layer_span = core::timeline::layer_span("train", node.layer->name());
      node.layer->backward(args);
    });
    if (mixed_precision()) {
      for (const Parameter* p : node.params) {
        compute_params_->finish_gradient(static_cast<size_t>(p - params_.data()), unscale);
      }
    }
    for (size_t j = 0; j < node.inputs.size(); ++j) {
      if (node.routes[j] == GradRoute::kAccumulate) {
        const core::NDArray& grad = plan.grads[node.inputs[j]];
        ops::add(grad, grad, plan.scratch[k][j]);
      }
    }
    if (!on_gradient_ready) continue;
    for (const Parameter* p : node.params) {
      if (!p->auxiliary && p->grad_req != GradReq::kNull) on_gradient_ready(static_cast<size_t>(p - params_.data()));
    }
  }
  return loss;
}

const core::NDArray& Net::output(size_t index) const {
  if (index >= num_outputs()) {
    throw Error(ErrorCode::kInvalidArgument, "output index " + std::to_string(index) + " is outside the " +
                                                 std::to_string(num_outputs()) + " output(s)");
  }
  if (last_forward_ == nullptr) throw Error(ErrorCode::kBadState, "net: no output before a completed forward");
  return mixed_precision() ? last_forward_->logits32 : last_forward_->values[output_value_];
}

}  // namespace dt::nn
