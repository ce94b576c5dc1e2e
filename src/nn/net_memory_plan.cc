#include "nn/net.h"

// Net: the activation and gradient buffers of one batch size (a Plan), a
// few kept at once, gradients allocated only once a backward needs them.

#include "nn/net_internals.h"

namespace dt::nn {

using core::Error;
using core::ErrorCode;

namespace {

// Batch sizes whose buffers are kept at once (see the header).
constexpr size_t kMaxPlans = 4;

}  // namespace

Net::Plan& Net::plan_for(const std::vector<core::NDArray>& inputs) {
  const int64_t batch = inputs.front().shape()[0];
  for (auto it = plans_.begin(); it != plans_.end(); ++it) {
    if (it->batch == batch) {
      plans_.splice(plans_.begin(), plans_, it);
      return plans_.front();
    }
  }

  Plan plan;
  plan.batch = batch;
  const size_t num_inputs = inputs.size();
  plan.shapes.resize(num_inputs + nodes_.size());
  plan.values.resize(num_inputs + nodes_.size());
  for (size_t i = 0; i < num_inputs; ++i) plan.shapes[i] = inputs[i].shape();
  for (size_t k = 0; k < nodes_.size(); ++k) {
    const Layer& layer = *nodes_[k].layer;
    std::vector<core::Shape> in;
    for (size_t v : nodes_[k].inputs) in.push_back(plan.shapes[v]);
    const core::Shape out = in_layer(layer, [&] { return layer.output_shape(in); });
    plan.shapes[num_inputs + k] = out;
    plan.values[num_inputs + k] = core::NDArray::empty(ctx_, precision_.compute_dtype(), out);
  }
  if (mixed_precision()) {
    plan.cast_inputs.resize(num_inputs);
    for (size_t i = 0; i < num_inputs; ++i) {
      plan.cast_inputs[i] = core::NDArray::empty(ctx_, precision_.compute_dtype(), plan.shapes[i]);
    }
    plan.logits32 = core::NDArray::empty(ctx_, core::DType::kFloat32, plan.shapes[output_value_]);
  }
  if (plans_.size() == kMaxPlans) {
    if (last_forward_ == &plans_.back()) last_forward_ = nullptr;
    plans_.pop_back();
  }
  plans_.push_front(std::move(plan));
  return plans_.front();
}

void Net::allocate_gradients(Plan& plan) {
  const size_t num_inputs = description_.inputs.size();
  plan.grads.resize(plan.shapes.size());
  for (size_t v = num_inputs; v < plan.shapes.size(); ++v) {
    plan.grads[v] = core::NDArray::empty(ctx_, precision_.compute_dtype(), plan.shapes[v]);
  }
  if (mixed_precision()) {
    plan.dlogits32 = core::NDArray::empty(ctx_, core::DType::kFloat32, plan.shapes[output_value_]);
  }
  plan.scratch.resize(nodes_.size());
  for (size_t k = 0; k < nodes_.size(); ++k) {
    plan.scratch[k].resize(nodes_[k].inputs.size());
    for (size_t j = 0; j < nodes_[k].inputs.size(); ++j) {
      if (nodes_[k].routes[j] == GradRoute::kAccumulate) {
        plan.scratch[k][j] =
            core::NDArray::empty(ctx_, precision_.compute_dtype(), plan.shapes[nodes_[k].inputs[j]]);
      }
    }
  }
  plan.have_grads = true;
}

}  // namespace dt::nn
