#include "nn/layers/dense_layer.h"

namespace dt::nn::layers {

DenseLayer::DenseLayer(std::string name, const Options& options)
    : Layer(std::move(name)), options_(options) {
  if (options_.units <= 0) {
    throw core::Error(core::ErrorCode::kInvalidArgument,
                      describe(*this) + ": units must be positive, got " + std::to_string(options_.units));
  }
}

std::unique_ptr<Layer> DenseLayer::create(const std::string& name, const nlohmann::json& attributes) {
  AttributeReader reader("Dense", name, attributes);
  Options o;
  if (!reader.has("units")) reader.fail("units", "is required");
  o.units = reader.get_int("units", 0, 1);
  o.in_units = reader.get_int("in_units", 0, 0);
  o.use_bias = reader.get_bool("use_bias", true);
  o.flatten = reader.get_bool("flatten", true);
  o.weight_init = reader.get_initializer("weight_initializer", o.weight_init);
  o.bias_init = reader.get_initializer("bias_initializer", o.bias_init);
  reader.finish();
  return std::make_unique<DenseLayer>(name, o);
}

std::pair<int64_t, int64_t> DenseLayer::matrix_of(const core::Shape& input) const {
  if (input.ndim() < 2) {
    throw_shape_error(*this, "(N, ...) with at least 2 dims", input);
  }
  int64_t in = 0;
  if (options_.flatten) {
    in = 1;
    for (size_t i = 1; i < input.ndim(); ++i) in *= input[i];
  } else {
    in = input[input.ndim() - 1];
  }
  if (in == 0 || input.numel() == 0) throw_shape_error(*this, "a non-empty (N, ...)", input);
  if (options_.in_units != 0 && in != options_.in_units) {
    throw_shape_error(*this,
                      std::string(options_.flatten ? "(N, ...) with prod(...)" : "(..., in_units) with in_units") +
                          " = " + std::to_string(options_.in_units),
                      input);
  }
  return {input.numel() / in, in};
}

core::Shape DenseLayer::output_shape(const std::vector<core::Shape>& inputs) const {
  const core::Shape& x = inputs.at(0);
  matrix_of(x);
  if (options_.flatten) return core::Shape({x[0], options_.units});
  std::vector<int64_t> dims = x.to_vector();
  dims.back() = options_.units;
  return core::Shape(dims);
}

std::vector<ParamSpec> DenseLayer::param_specs(const std::vector<core::Shape>& inputs) const {
  const int64_t in = matrix_of(inputs.at(0)).second;
  std::vector<ParamSpec> specs{{"weight", core::Shape({options_.units, in}), options_.weight_init, false, true}};
  if (options_.use_bias) specs.push_back({"bias", core::Shape({options_.units}), options_.bias_init});
  return specs;
}

ops::InnerProduct& DenseLayer::kernel(const core::NDArray& input, const LayerRuntime* runtime) {
  return kernels_.get(input, [&] {
    const auto [rows, in] = matrix_of(input.shape());
    ops::InnerProductParams p;
    p.N = rows;
    p.in = in;
    p.out = options_.units;
    p.has_bias = options_.use_bias;
    const ops::Target target = target_of(*this, input, runtime);
    return run_kernel(*this, [&] { return ops::make_inner_product(target, p); });
  });
}

void DenseLayer::forward(const ForwardArgs& args) {
  check_forward(*this, args, options_.use_bias ? 2 : 1);
  weighted_forward(*this, kernel(*args.inputs[0], args.runtime), args, options_.use_bias);
}

void DenseLayer::backward(const BackwardArgs& args) {
  check_backward(*this, args, options_.use_bias ? 2 : 1);
  weighted_backward(*this, kernel(*args.inputs[0], args.runtime), args, options_.use_bias);
}

nlohmann::json DenseLayer::attributes() const {
  nlohmann::json a = {{"units", options_.units},
                      {"use_bias", options_.use_bias},
                      {"flatten", options_.flatten},
                      {"weight_initializer", initializer_to_json(options_.weight_init)},
                      {"bias_initializer", initializer_to_json(options_.bias_init)}};
  if (options_.in_units != 0) a["in_units"] = options_.in_units;
  return a;
}

}  // namespace dt::nn::layers
