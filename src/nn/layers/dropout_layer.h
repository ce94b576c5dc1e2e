// Inverted dropout: in training each element is zeroed with probability
// rate and the rest scaled by 1 / (1 - rate); in inference the layer is the
// identity. The mask is a pure function of (runtime seed, layer name,
// runtime step, element index), so a run replays exactly for a seed, every
// step draws a fresh mask, and two Dropout layers never share one. The GPU
// kernel draws the very mask the CPU loop draws (ops/dropout_mask.h).
#pragma once

#include <cstdint>

#include "nn/layer.h"
#include "nn/layers/layer_support.h"

namespace dt::nn::layers {

class DropoutLayer : public Layer {
 public:
  DropoutLayer(std::string name, double rate);
  static std::unique_ptr<Layer> create(const std::string& name, const nlohmann::json& attributes);

  const char* type() const override { return "Dropout"; }
  core::Shape output_shape(const std::vector<core::Shape>& inputs) const override;
  void forward(const ForwardArgs& args) override;
  void backward(const BackwardArgs& args) override;
  nlohmann::json attributes() const override;

  // Whether element `index` survives for this (seed, name, step): exposed so
  // that tests can check the mask's statistics and replay.
  static bool keeps(uint64_t key, uint64_t index, double rate);
  static uint64_t mask_key(uint64_t seed, const std::string& name, uint64_t step);

 private:
  double rate_;
  // The latest forward's mask (1 = kept, uint8 on the input's device),
  // reused while the shape and device stay; unused after an inference
  // forward, which backward then treats as the identity it was.
  core::NDArray mask_;
  core::Shape mask_shape_;
  bool last_train_ = false;
  bool have_forward_ = false;
};

}  // namespace dt::nn::layers
