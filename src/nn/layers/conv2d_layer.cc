#include "nn/layers/conv2d_layer.h"

namespace dt::nn::layers {

using core::Error;
using core::ErrorCode;

Conv2DLayer::Conv2DLayer(std::string name, const Options& options)
    : Layer(std::move(name)), options_(options) {
  const Options& o = options_;
  auto require = [&](bool ok, const std::string& what) {
    if (!ok) throw Error(ErrorCode::kInvalidArgument, describe(*this) + ": " + what);
  };
  require(o.channels > 0, "channels must be positive");
  require(o.kernel_size.first > 0 && o.kernel_size.second > 0, "kernel_size must be positive");
  require(o.strides.first > 0 && o.strides.second > 0, "strides must be positive");
  require(o.padding.first >= 0 && o.padding.second >= 0, "padding must be non-negative");
  require(o.dilation.first > 0 && o.dilation.second > 0, "dilation must be positive (1 = dense)");
  require(o.groups > 0, "groups must be positive");
  require(o.channels % o.groups == 0, "channels (" + std::to_string(o.channels) +
                                          ") must be a multiple of groups (" + std::to_string(o.groups) + ")");
  require(o.in_channels >= 0, "in_channels must be non-negative");
}

std::unique_ptr<Layer> Conv2DLayer::create(const std::string& name, const nlohmann::json& attributes) {
  AttributeReader reader("Conv2D", name, attributes);
  Options o;
  if (!reader.has("channels")) reader.fail("channels", "is required");
  o.channels = reader.get_int("channels", 0, 1);
  const char* kernel_key = reader.pick_alias("kernel_size", "kernel");
  if (!reader.has(kernel_key)) reader.fail("kernel_size", "is required");
  o.kernel_size = reader.get_pair(kernel_key, o.kernel_size, 1);
  o.strides = reader.get_pair("strides", o.strides, 1);
  o.padding = reader.get_pair("padding", o.padding, 0);
  o.dilation = reader.get_pair("dilation", o.dilation, 1);
  o.groups = reader.get_int("groups", o.groups, 1);
  o.in_channels = reader.get_int("in_channels", 0, 0);
  o.use_bias = reader.get_bool("use_bias", true);
  o.layout = reader.get_layout("layout");
  o.weight_init = reader.get_initializer("weight_initializer", o.weight_init);
  o.bias_init = reader.get_initializer("bias_initializer", o.bias_init);
  reader.finish();
  return std::make_unique<Conv2DLayer>(name, o);
}

ops::Conv2DParams Conv2DLayer::params_for(const core::Shape& x) const {
  const Options& o = options_;
  const std::string c_rule =
      o.in_channels != 0 ? "C=" + std::to_string(o.in_channels)
                         : "C a multiple of groups=" + std::to_string(o.groups);
  const std::string dims = layout_dims_text(o.layout);
  if (x.ndim() != 4) throw_shape_error(*this, dims + " with " + c_rule, x);
  if (x.numel() == 0) throw_shape_error(*this, "a non-empty " + dims, x);
  const ops::LogicalDims d = ops::logical_dims(o.layout, x);
  if ((o.in_channels != 0 && d.C != o.in_channels) || d.C % o.groups != 0) {
    throw_shape_error(*this, dims + " with " + c_rule, x);
  }
  ops::Conv2DParams p;
  p.N = d.N;
  p.C = d.C;
  p.H = d.H;
  p.W = d.W;
  p.layout = o.layout;
  p.K = o.channels;
  p.R = o.kernel_size.first;
  p.S = o.kernel_size.second;
  p.stride_h = o.strides.first;
  p.stride_w = o.strides.second;
  p.pad_h = o.padding.first;
  p.pad_w = o.padding.second;
  p.dilation_h = o.dilation.first;
  p.dilation_w = o.dilation.second;
  p.groups = o.groups;
  p.has_bias = o.use_bias;
  if (p.out_h() <= 0 || p.out_w() <= 0) {
    const int64_t min_h = (p.R - 1) * p.dilation_h + 1 - 2 * p.pad_h;
    const int64_t min_w = (p.S - 1) * p.dilation_w + 1 - 2 * p.pad_w;
    throw_shape_error(*this,
                      dims + " with H >= " + std::to_string(min_h) + " and W >= " +
                          std::to_string(min_w) + " for the dilated kernel and padding",
                      x);
  }
  return p;
}

core::Shape Conv2DLayer::output_shape(const std::vector<core::Shape>& inputs) const {
  const ops::Conv2DParams p = params_for(inputs.at(0));
  return ops::layout_shape(p.layout, p.N, p.K, p.out_h(), p.out_w());
}

std::vector<ParamSpec> Conv2DLayer::param_specs(const std::vector<core::Shape>& inputs) const {
  const ops::Conv2DParams p = params_for(inputs.at(0));
  std::vector<ParamSpec> specs{
      {"weight", core::Shape({p.K, p.C / p.groups, p.R, p.S}), options_.weight_init, false, true}};
  if (options_.use_bias) specs.push_back({"bias", core::Shape({p.K}), options_.bias_init});
  return specs;
}

ops::Conv2D& Conv2DLayer::kernel(const core::NDArray& input, const LayerRuntime* runtime) {
  if (on_gpu(input) && !ops::gpu_conv2d_available()) {
    throw_no_gpu_kernel(*this, "in this build: GPU convolution needs cuDNN");
  }
  return kernels_.get(input, [&] {
    const ops::Conv2DParams p = params_for(input.shape());
    const ops::Target target = target_of(*this, input, runtime);
    return run_kernel(*this, [&] { return ops::make_conv2d(target, p); });
  });
}

void Conv2DLayer::forward(const ForwardArgs& args) {
  check_forward(*this, args, options_.use_bias ? 2 : 1);
  weighted_forward(*this, kernel(*args.inputs[0], args.runtime), args, options_.use_bias);
}

void Conv2DLayer::backward(const BackwardArgs& args) {
  check_backward(*this, args, options_.use_bias ? 2 : 1);
  weighted_backward(*this, kernel(*args.inputs[0], args.runtime), args, options_.use_bias);
}

nlohmann::json Conv2DLayer::attributes() const {
  const Options& o = options_;
  nlohmann::json a = {{"channels", o.channels},
                      {"kernel_size", pair_to_json(o.kernel_size)},
                      {"strides", pair_to_json(o.strides)},
                      {"padding", pair_to_json(o.padding)},
                      {"dilation", pair_to_json(o.dilation)},
                      {"groups", o.groups},
                      {"use_bias", o.use_bias},
                      {"weight_initializer", initializer_to_json(o.weight_init)},
                      {"bias_initializer", initializer_to_json(o.bias_init)}};
  if (o.in_channels != 0) a["in_channels"] = o.in_channels;
  add_layout_attribute(a, o.layout);
  return a;
}

}  // namespace dt::nn::layers
