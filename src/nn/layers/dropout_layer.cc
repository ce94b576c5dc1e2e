#include "nn/layers/dropout_layer.h"

#include "nn/layers/seeded_hash.h"
#include "ops/dropout.h"
#include "ops/dropout_mask.h"

namespace dt::nn::layers {

using core::Error;
using core::ErrorCode;

DropoutLayer::DropoutLayer(std::string name, double rate) : Layer(std::move(name)), rate_(rate) {
  // rate 1 would scale the (no) survivors by infinity.
  if (!(rate_ >= 0.0 && rate_ < 1.0)) {
    throw Error(ErrorCode::kInvalidArgument,
                describe(*this) + ": rate must be in [0, 1), got " + std::to_string(rate_));
  }
}

std::unique_ptr<Layer> DropoutLayer::create(const std::string& name, const nlohmann::json& attributes) {
  AttributeReader reader("Dropout", name, attributes);
  const double rate = reader.get_double("rate", 0.5);
  reader.finish();
  return std::make_unique<DropoutLayer>(name, rate);
}

uint64_t DropoutLayer::mask_key(uint64_t seed, const std::string& name, uint64_t step) {
  return mix64(mix64(seed ^ fnv1a64(name)) + step);
}

bool DropoutLayer::keeps(uint64_t key, uint64_t index, double rate) { return ops::dropout_keeps(key, index, rate); }

namespace {

// The mask array for input x: the previous one while shape and device stay.
void ensure_mask(core::NDArray& mask, const core::NDArray& x) {
  const auto& ctx = x.context();
  if (mask.defined() && mask.shape() == x.shape() && core::same_device(*mask.context(), *ctx)) {
    return;
  }
  mask = core::NDArray::empty(ctx, core::DType::kUInt8, x.shape());
}

}  // namespace

core::Shape DropoutLayer::output_shape(const std::vector<core::Shape>& inputs) const {
  return inputs.at(0);
}

void DropoutLayer::forward(const ForwardArgs& args) {
  check_forward(*this, args, 0);
  const core::NDArray& x = *args.inputs[0];
  const core::NDArray& y = *args.output;
  const bool drop = args.train && rate_ > 0.0;
  if (drop && args.runtime == nullptr) {
    throw Error(ErrorCode::kBadState, describe(*this) + ": training needs the runtime's seed and step");
  }
  have_forward_ = true;
  mask_shape_ = x.shape();
  last_train_ = drop;
  if (!drop) {
    if (y.data() != x.data()) y.copy_from(x);
    return;
  }
  const uint64_t key = mask_key(args.runtime->seed, name(), args.runtime->step);
  ensure_mask(mask_, x);
  run_kernel(*this, [&] {
    ops::dropout_forward(*x.context(), x.dtype(), x.data(), y.data(), mask_.data_as<uint8_t>(), x.size(), key, rate_);
  });
}

void DropoutLayer::backward(const BackwardArgs& args) {
  check_backward(*this, args, 0);
  const core::NDArray& x = *args.inputs[0];
  if (!have_forward_ || mask_shape_ != x.shape()) {
    throw Error(ErrorCode::kBadState,
                describe(*this) + ": backward needs a forward on input " + x.shape().to_string() + " first");
  }
  if (args.input_grads[0] == nullptr) return;
  const core::NDArray& dy = *args.output_grad;
  const core::NDArray& dx = *args.input_grads[0];
  if (!last_train_) {
    if (dx.data() != dy.data()) dx.copy_from(dy);
    return;
  }
  run_kernel(*this, [&] {
    ops::dropout_backward(*x.context(), dy.dtype(), dy.data(), dx.data(), mask_.data_as<uint8_t>(), x.size(), rate_);
  });
}

nlohmann::json DropoutLayer::attributes() const { return {{"rate", rate_}}; }

}  // namespace dt::nn::layers
