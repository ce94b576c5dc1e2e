#include "nn/layers/dropout_layer.h"

#include <cstring>

#include "nn/layers/seeded_hash.h"

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

bool DropoutLayer::keeps(uint64_t key, uint64_t index, double rate) {
  // Counter-based: element i's draw depends on i alone, not on the order
  // elements are visited in. 53 bits give a uniform in [0, 1).
  const double u = static_cast<double>(mix64(key + index * 0xd1b54a32d192ed03ULL) >> 11) * 0x1.0p-53;
  return u >= rate;
}

core::Shape DropoutLayer::output_shape(const std::vector<core::Shape>& inputs) const {
  return inputs.at(0);
}

void DropoutLayer::forward(const ForwardArgs& args) {
  check_forward(*this, args, 0);
  // The mask comes from a host-side counter hash (seeded_hash.h); a device
  // version must draw the very same mask, which is not written yet.
  if (on_gpu(*args.inputs[0])) throw_no_gpu_kernel(*this, "yet (its mask is drawn on the CPU)");
  const core::NDArray& x = *args.inputs[0];
  const float* in = x.data_as<float>();
  float* out = args.output->data_as<float>();
  const size_t n = x.size();
  const bool drop = args.train && rate_ > 0.0;
  if (drop && args.runtime == nullptr) {
    throw Error(ErrorCode::kBadState, describe(*this) + ": training needs the runtime's seed and step");
  }
  have_forward_ = true;
  mask_shape_ = x.shape();
  last_train_ = drop;
  if (!drop) {
    mask_.clear();
    if (out != in) std::memcpy(out, in, n * sizeof(float));
    return;
  }
  const uint64_t key = mask_key(args.runtime->seed, name(), args.runtime->step);
  const float scale = static_cast<float>(1.0 / (1.0 - rate_));
  mask_.resize(n);
  for (size_t i = 0; i < n; ++i) {
    mask_[i] = keeps(key, i, rate_) ? 1 : 0;
    out[i] = mask_[i] ? in[i] * scale : 0.0f;
  }
}

void DropoutLayer::backward(const BackwardArgs& args) {
  check_backward(*this, args, 0);
  if (on_gpu(*args.inputs[0])) throw_no_gpu_kernel(*this, "yet (its mask is drawn on the CPU)");
  const core::NDArray& x = *args.inputs[0];
  if (!have_forward_ || mask_shape_ != x.shape()) {
    throw Error(ErrorCode::kBadState,
                describe(*this) + ": backward needs a forward on input " + x.shape().to_string() + " first");
  }
  if (args.input_grads[0] == nullptr) return;
  const float* dy = args.output_grad->data_as<float>();
  float* dx = args.input_grads[0]->data_as<float>();
  const size_t n = x.size();
  if (!last_train_) {
    if (dx != dy) std::memcpy(dx, dy, n * sizeof(float));
    return;
  }
  const float scale = static_cast<float>(1.0 / (1.0 - rate_));
  for (size_t i = 0; i < n; ++i) dx[i] = mask_[i] ? dy[i] * scale : 0.0f;
}

nlohmann::json DropoutLayer::attributes() const { return {{"rate", rate_}}; }

}  // namespace dt::nn::layers
