#include "nn/layers/layer_support.h"

namespace dt::nn::layers {

using core::Error;
using core::ErrorCode;

std::string describe(const Layer& layer) {
  return std::string(layer.type()) + " '" + layer.name() + "'";
}

void throw_shape_error(const Layer& layer, const std::string& expected, const core::Shape& got) {
  throw Error(ErrorCode::kShapeMismatch,
              describe(layer) + ": expected input " + expected + ", got " + got.to_string());
}

void check_cpu_float(const Layer& layer, const core::NDArray& array, const char* what) {
  if (!array.defined()) {
    throw Error(ErrorCode::kInvalidArgument, describe(layer) + ": " + what + " is not allocated");
  }
  if (array.dtype() != core::DType::kFloat32) {
    throw Error(ErrorCode::kDtypeMismatch, describe(layer) + ": " + what + " must be float32 (F32), got " +
                                               core::dtype_name(array.dtype()));
  }
  if (!array.context()->is_cpu()) {
    throw Error(ErrorCode::kNotSupported, describe(layer) + ": " + what + " is on " +
                                              array.context()->to_string() +
                                              "; this layer runs on the CPU only");
  }
}

bool on_gpu(const core::NDArray& first_input) { return first_input.context()->type() == core::DeviceType::kGpu; }

void throw_no_gpu_kernel(const Layer& layer, const std::string& why) {
  throw Error(ErrorCode::kNotSupported, describe(layer) + ": no GPU kernel " + why);
}

void check_float_on(const Layer& layer, const core::NDArray& array, const char* what, const core::Context& device,
                    core::DType dtype) {
  if (device.is_cpu() || !array.defined()) {
    check_cpu_float(layer, array, what);
    return;
  }
  if (array.dtype() != dtype) {
    throw Error(ErrorCode::kDtypeMismatch, describe(layer) + ": " + what + " must be " + core::dtype_name(dtype) +
                                               ", got " + core::dtype_name(array.dtype()));
  }
  const core::Context& at = *array.context();
  if (!core::same_device(at, device)) {
    throw Error(ErrorCode::kInvalidArgument, describe(layer) + ": " + what + " is on " + at.to_string() +
                                                 ", the layer's input on " + device.to_string());
  }
}

namespace {

bool is_activation_dtype(core::DType dtype) {
  return dtype == core::DType::kFloat32 || dtype == core::DType::kFloat16 || dtype == core::DType::kBFloat16;
}

// Checks the inputs and returns the call's device (the first input's); the
// call's activation dtype is the first input's.
const core::Context& check_inputs(const Layer& layer, const std::vector<const core::NDArray*>& inputs) {
  if (inputs.size() != layer.num_inputs()) {
    throw Error(ErrorCode::kInvalidArgument, describe(layer) + ": takes " +
                                                 std::to_string(layer.num_inputs()) +
                                                 " input(s), got " + std::to_string(inputs.size()));
  }
  for (const core::NDArray* input : inputs) {
    if (input == nullptr) throw Error(ErrorCode::kInvalidArgument, describe(layer) + ": input is null");
  }
  const core::NDArray& first = *inputs[0];
  if (!first.defined() || first.context()->is_cpu()) check_cpu_float(layer, first, "input");
  if (!is_activation_dtype(first.dtype())) {
    throw Error(ErrorCode::kDtypeMismatch, describe(layer) + ": input must be float32, float16 or bfloat16, got " +
                                               core::dtype_name(first.dtype()));
  }
  const core::Context& device = *first.context();
  for (const core::NDArray* input : inputs) check_float_on(layer, *input, "input", device, first.dtype());
  return device;
}

// The count, then each parameter's device and dtype: the activations' where
// its spec reads it in the compute dtype, float32 otherwise. Returns the specs.
std::vector<ParamSpec> check_params(const Layer& layer, const std::vector<Parameter*>& params, size_t expected,
                  const std::vector<core::Shape>& input_shapes, const core::Context& device,
                  core::DType activation_dtype) {
  if (params.size() != expected) {
    throw Error(ErrorCode::kInvalidArgument, describe(layer) + ": expects " + std::to_string(expected) +
                                                 " parameter(s), got " + std::to_string(params.size()));
  }
  for (const Parameter* param : params) {
    if (param == nullptr) throw Error(ErrorCode::kInvalidArgument, describe(layer) + ": parameter is null");
  }
  if (expected == 0) return {};
  std::vector<ParamSpec> specs = layer.param_specs(input_shapes);
  for (size_t i = 0; i < params.size() && i < specs.size(); ++i) {
    const core::DType dtype = specs[i].in_compute_dtype ? activation_dtype : core::DType::kFloat32;
    check_float_on(layer, params[i]->value, params[i]->name.c_str(), device, dtype);
  }
  return specs;
}

void check_same_shape(const Layer& layer, const core::NDArray& array, const core::Shape& expected,
                      const char* what) {
  if (array.shape() != expected) {
    throw Error(ErrorCode::kShapeMismatch, describe(layer) + ": " + what + " has shape " +
                                               array.shape().to_string() + ", expected " +
                                               expected.to_string());
  }
}

}  // namespace

std::vector<core::Shape> check_forward(const Layer& layer, const ForwardArgs& args,
                                       size_t num_params) {
  const core::Context& device = check_inputs(layer, args.inputs);
  std::vector<core::Shape> shapes;
  shapes.reserve(args.inputs.size());
  for (const core::NDArray* input : args.inputs) shapes.push_back(input->shape());
  const core::Shape out = layer.output_shape(shapes);
  if (args.output == nullptr) throw Error(ErrorCode::kInvalidArgument, describe(layer) + ": output is null");
  const core::DType dtype = args.inputs[0]->dtype();
  check_float_on(layer, *args.output, "output", device, dtype);
  check_same_shape(layer, *args.output, out, "output");
  const std::vector<ParamSpec> specs = check_params(layer, args.params, num_params, shapes, device, dtype);
  for (size_t i = 0; i < specs.size(); ++i) {
    check_same_shape(layer, args.params[i]->value, specs[i].shape, args.params[i]->name.c_str());
  }
  return shapes;
}

void check_backward(const Layer& layer, const BackwardArgs& args, size_t num_params) {
  const core::Context& device = check_inputs(layer, args.inputs);
  std::vector<core::Shape> shapes;
  for (const core::NDArray* input : args.inputs) shapes.push_back(input->shape());
  const core::Shape out = layer.output_shape(shapes);
  if (args.output_grad == nullptr) {
    throw Error(ErrorCode::kInvalidArgument, describe(layer) + ": output gradient is null");
  }
  const core::DType dtype = args.inputs[0]->dtype();
  check_float_on(layer, *args.output_grad, "output gradient", device, dtype);
  check_same_shape(layer, *args.output_grad, out, "output gradient");
  if (args.input_grads.size() != args.inputs.size()) {
    throw Error(ErrorCode::kInvalidArgument,
                describe(layer) + ": " + std::to_string(args.input_grads.size()) +
                    " input gradient slot(s) for " + std::to_string(args.inputs.size()) + " input(s)");
  }
  for (size_t i = 0; i < args.input_grads.size(); ++i) {
    if (args.input_grads[i] == nullptr) continue;
    check_float_on(layer, *args.input_grads[i], "input gradient", device, dtype);
    check_same_shape(layer, *args.input_grads[i], shapes[i], "input gradient");
  }
  check_params(layer, args.params, num_params, shapes, device, dtype);
}

const ops::cpu::CpuEngine& engine_of(const Layer& layer, const LayerRuntime* runtime) {
  if (runtime == nullptr || runtime->engine == nullptr) {
    throw Error(ErrorCode::kBadState, describe(layer) + ": no CPU engine in the layer runtime");
  }
  return *runtime->engine;
}

ops::Target target_of(const Layer& layer, const core::NDArray& input, const LayerRuntime* runtime) {
  ops::Target target;
  target.context = input.context();
  target.dtype = input.dtype();
  if (!on_gpu(input)) target.engine = &engine_of(layer, runtime);
  return target;
}

void fused_param_grads(Parameter& a, Parameter* b,
                       const std::function<void(KernelData da, KernelData db)>& compute) {
  const bool want_a = a.grad_req != GradReq::kNull;
  const bool want_b = b != nullptr && b->grad_req != GradReq::kNull;
  if (!want_a && !want_b) return;
  // Nesting write_param_grad keeps each gradient's own write/add handling;
  // the inner call finishes (and accumulates) before the outer one does.
  // A gradient nobody wants still needs somewhere to go, on the kernel's
  // device: host vectors for the CPU, arrays on the parameter's GPU.
  std::vector<float> scratch_a, scratch_b;
  core::NDArray device_scratch_a, device_scratch_b;
  auto scratch_for = [](const Parameter& p, std::vector<float>& host, core::NDArray& device) {
    if (p.value.context()->is_cpu()) {
      host.resize(p.value.size());
      return KernelData(host.data(), core::DType::kFloat32);
    }
    device = core::NDArray::empty(p.value.context(), p.value.dtype(), p.value.shape());
    return KernelData(device);
  };
  auto with_b = [&](KernelData da) {
    if (b == nullptr) {
      compute(da, KernelData(nullptr, core::DType::kFloat32));
    } else if (want_b) {
      write_param_grad(*b, [&](KernelData db) { compute(da, db); });
    } else {
      compute(da, scratch_for(*b, scratch_b, device_scratch_b));
    }
  };
  if (want_a) {
    write_param_grad(a, with_b);
  } else {
    with_b(scratch_for(a, scratch_a, device_scratch_a));
  }
}

// ---- attributes ---------------------------------------------------------------

AttributeReader::AttributeReader(const char* type, const std::string& name,
                                 const nlohmann::json& attributes)
    : prefix_(std::string(type) + " '" + name + "'"), attributes_(attributes) {
  if (!attributes_.is_null() && !attributes_.is_object()) {
    throw Error(ErrorCode::kInvalidArgument, prefix_ + ": attributes must be a JSON object, got " +
                                                 attributes_.dump());
  }
}

void AttributeReader::fail(const std::string& key, const std::string& what) const {
  throw Error(ErrorCode::kInvalidArgument, prefix_ + ": attribute '" + key + "' " + what);
}

bool AttributeReader::has(const char* key) const {
  return attributes_.is_object() && attributes_.contains(key);
}

const nlohmann::json& AttributeReader::value_of(const char* key) {
  known_.insert(key);
  return attributes_.at(key);
}

int64_t AttributeReader::get_int(const char* key, int64_t fallback, int64_t min_value) {
  known_.insert(key);
  if (!has(key)) return fallback;
  const nlohmann::json& v = value_of(key);
  if (!v.is_number_integer()) fail(key, "must be an integer, got " + v.dump());
  const int64_t n = v.get<int64_t>();
  if (n < min_value) fail(key, "must be >= " + std::to_string(min_value) + ", got " + v.dump());
  return n;
}

double AttributeReader::get_double(const char* key, double fallback) {
  known_.insert(key);
  if (!has(key)) return fallback;
  const nlohmann::json& v = value_of(key);
  if (!v.is_number()) fail(key, "must be a number, got " + v.dump());
  return v.get<double>();
}

bool AttributeReader::get_bool(const char* key, bool fallback) {
  known_.insert(key);
  if (!has(key)) return fallback;
  const nlohmann::json& v = value_of(key);
  if (!v.is_boolean()) fail(key, "must be true or false, got " + v.dump());
  return v.get<bool>();
}

std::string AttributeReader::get_string(const char* key, const std::string& fallback) {
  known_.insert(key);
  if (!has(key)) return fallback;
  const nlohmann::json& v = value_of(key);
  if (!v.is_string()) fail(key, "must be a string, got " + v.dump());
  return v.get<std::string>();
}

ops::TensorLayout AttributeReader::get_layout(const char* key) {
  const std::string text = get_string(key, "NCHW");
  if (text != "NCHW" && text != "NHWC") fail(key, "must be \"NCHW\" or \"NHWC\", got \"" + text + "\"");
  return ops::parse_layout(text, key);
}

std::pair<int64_t, int64_t> AttributeReader::get_pair(const char* key,
                                                      std::pair<int64_t, int64_t> fallback,
                                                      int64_t min_value) {
  known_.insert(key);
  if (!has(key)) return fallback;
  const nlohmann::json& v = value_of(key);
  const std::string rule = "must be an integer or a list of two integers, each >= " +
                           std::to_string(min_value) + ", got " + v.dump();
  std::pair<int64_t, int64_t> out;
  if (v.is_number_integer()) {
    out = {v.get<int64_t>(), v.get<int64_t>()};
  } else if (v.is_array() && v.size() == 2 && v[0].is_number_integer() && v[1].is_number_integer()) {
    out = {v[0].get<int64_t>(), v[1].get<int64_t>()};
  } else {
    fail(key, rule);
  }
  if (out.first < min_value || out.second < min_value) fail(key, rule);
  return out;
}

Initializer AttributeReader::get_initializer(const char* key, const Initializer& fallback) {
  known_.insert(key);
  if (!has(key)) return fallback;
  const nlohmann::json& v = value_of(key);
  Initializer init;
  auto kind_of = [&](const nlohmann::json& name) {
    try {
      return Initializer::kind_from_name(name.get<std::string>());
    } catch (const Error& e) {
      fail(key, e.what());
    }
  };
  if (v.is_string()) {
    init.kind = kind_of(v);
    return init;
  }
  if (!v.is_object() || !v.contains("kind") || !v["kind"].is_string()) {
    fail(key, "must be a kind name or an object with a string \"kind\", got " + v.dump());
  }
  init.kind = kind_of(v["kind"]);
  for (const auto& [field, number] : v.items()) {
    if (field == "kind") continue;
    if (!number.is_number()) fail(key, "field '" + field + "' must be a number, got " + number.dump());
    if (field == "value") {
      init.value = number.get<double>();
    } else if (field == "scale") {
      init.scale = number.get<double>();
    } else if (field == "gain") {
      init.gain = number.get<double>();
    } else {
      fail(key, "has unknown field '" + field + "' (known: kind, value, scale, gain)");
    }
  }
  return init;
}

const char* AttributeReader::pick_alias(const char* primary, const char* alias) {
  known_.insert(primary);
  known_.insert(alias);
  if (has(primary) && has(alias)) {
    fail(primary, std::string("and '") + alias + "' are the same attribute; give only one");
  }
  return has(alias) ? alias : primary;
}

void AttributeReader::finish() const {
  if (!attributes_.is_object()) return;
  std::string unknown;
  for (const auto& item : attributes_.items()) {
    if (known_.count(item.key()) == 0) unknown += (unknown.empty() ? "'" : ", '") + item.key() + "'";
  }
  if (unknown.empty()) return;
  std::string known;
  for (const std::string& k : known_) known += (known.empty() ? "" : ", ") + k;
  throw Error(ErrorCode::kInvalidArgument,
              prefix_ + ": unknown attribute(s) " + unknown + " (known: " + known + ")");
}

nlohmann::json pair_to_json(std::pair<int64_t, int64_t> value) {
  return nlohmann::json::array({value.first, value.second});
}

void add_layout_attribute(nlohmann::json& attributes, ops::TensorLayout layout) {
  if (layout != ops::TensorLayout::kNCHW) attributes["layout"] = ops::layout_name(layout);
}

std::string layout_dims_text(ops::TensorLayout layout) {
  return layout == ops::TensorLayout::kNCHW ? "(N, C, H, W)" : "(N, H, W, C)";
}

nlohmann::json initializer_to_json(const Initializer& init) {
  nlohmann::json out = {{"kind", Initializer::kind_name(init.kind)}};
  switch (init.kind) {
    case Initializer::Kind::kConstant:
      out["value"] = init.value;
      break;
    case Initializer::Kind::kUniform:
    case Initializer::Kind::kNormal:
      out["scale"] = init.scale;
      break;
    case Initializer::Kind::kXavierUniform:
    case Initializer::Kind::kXavierNormal:
    case Initializer::Kind::kKaimingUniform:
    case Initializer::Kind::kKaimingNormal:
      out["gain"] = init.gain;
      break;
    case Initializer::Kind::kZeros:
    case Initializer::Kind::kOnes:
      break;
  }
  return out;
}

}  // namespace dt::nn::layers
