#include "nn/layers/pool2d_layer.h"

namespace dt::nn::layers {

Pool2DLayer::Pool2DLayer(std::string name, const Window& window)
    : Layer(std::move(name)), window_(window) {}

void Pool2DLayer::validate_window() const {
  const Window& w = window_;
  auto require = [&](bool ok, const std::string& what) {
    if (!ok) throw core::Error(core::ErrorCode::kInvalidArgument, describe(*this) + ": " + what);
  };
  require(w.pool_size.first > 0 && w.pool_size.second > 0, "pool_size must be positive");
  require(w.strides.first > 0 && w.strides.second > 0, "strides must be positive");
  require(w.padding.first >= 0 && w.padding.second >= 0, "padding must be non-negative");
  // As in PyTorch: wider padding would let a window lie wholly in padding.
  require(2 * w.padding.first <= w.pool_size.first && 2 * w.padding.second <= w.pool_size.second,
          "padding must be at most half of pool_size");
}

Pool2DLayer::Window Pool2DLayer::read_window(AttributeReader& reader) {
  Window w;
  w.pool_size = reader.get_pair("pool_size", w.pool_size, 1);
  w.strides = reader.get_pair("strides", w.pool_size, 1);
  w.padding = reader.get_pair("padding", w.padding, 0);
  w.layout = reader.get_layout("layout");
  return w;
}

ops::Pool2DParams Pool2DLayer::params_for(const core::Shape& x) const {
  const std::string dims = layout_dims_text(window_.layout);
  if (x.ndim() != 4 || x.numel() == 0) throw_shape_error(*this, "a non-empty " + dims, x);
  const ops::LogicalDims d = ops::logical_dims(window_.layout, x);
  ops::Pool2DParams p;
  p.N = d.N;
  p.C = d.C;
  p.H = d.H;
  p.W = d.W;
  p.layout = window_.layout;
  p.kernel_h = window_.pool_size.first;
  p.kernel_w = window_.pool_size.second;
  p.stride_h = window_.strides.first;
  p.stride_w = window_.strides.second;
  p.pad_h = window_.padding.first;
  p.pad_w = window_.padding.second;
  if (p.out_h() <= 0 || p.out_w() <= 0) {
    throw_shape_error(*this,
                      dims + " with H >= " + std::to_string(p.kernel_h - 2 * p.pad_h) +
                          " and W >= " + std::to_string(p.kernel_w - 2 * p.pad_w) +
                          " for the window and padding",
                      x);
  }
  return p;
}

core::Shape Pool2DLayer::output_shape(const std::vector<core::Shape>& inputs) const {
  const ops::Pool2DParams p = params_for(inputs.at(0));
  return ops::layout_shape(p.layout, p.N, p.C, p.out_h(), p.out_w());
}

nlohmann::json Pool2DLayer::attributes() const {
  nlohmann::json a = {{"pool_size", pair_to_json(window_.pool_size)},
                      {"strides", pair_to_json(window_.strides)},
                      {"padding", pair_to_json(window_.padding)}};
  add_layout_attribute(a, window_.layout);
  return a;
}

}  // namespace dt::nn::layers
