// What Gluon's MaxPool2D and AvgPool2D share: the window attributes
// (pool_size, strides defaulting to pool_size, padding), the output shape
// rounded down, and the checks that name the layer before the kernel sees
// a bad window.
#pragma once

#include "nn/layer.h"
#include "nn/layers/layer_support.h"
#include "ops/pooling.h"

namespace dt::nn::layers {

class Pool2DLayer : public Layer {
 public:
  struct Window {
    std::pair<int64_t, int64_t> pool_size{2, 2};
    std::pair<int64_t, int64_t> strides{2, 2};
    std::pair<int64_t, int64_t> padding{0, 0};
    // MXNet's Pooling `layout`: input (N, H, W, C) with "NHWC".
    ops::TensorLayout layout = ops::TensorLayout::kNCHW;
  };

  core::Shape output_shape(const std::vector<core::Shape>& inputs) const override;
  nlohmann::json attributes() const override;

 protected:
  Pool2DLayer(std::string name, const Window& window);
  // Checks the window; called from the derived constructors, where type()
  // already names the concrete layer.
  void validate_window() const;
  // Reads pool_size, strides, padding and layout; the caller reads the rest and
  // calls reader.finish().
  static Window read_window(AttributeReader& reader);

  ops::Pool2DParams params_for(const core::Shape& input) const;

 private:
  Window window_;
};

}  // namespace dt::nn::layers
