#include "nn/net.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <unordered_map>

#include "core/error.h"
#include "core/safetensors.h"
#include "nn/compute_parameters.h"
#include "nn/layers/layer_support.h"
#include "nn/layers/softmax_cross_entropy_loss.h"
#include "ops/tensor_math.h"
#if DT_WITH_CUDA
#include "ops/cuda/gradient_cast.h"
#endif

namespace dt::nn {

using core::Error;
using core::ErrorCode;

namespace {

// Batch sizes whose buffers are kept at once (see the header).
constexpr size_t kMaxPlans = 4;

std::string in_quotes(const std::string& name) { return "\"" + name + "\""; }

// Runs fn, making sure an Error names the layer: the layers' own messages
// do ("Conv2D 'conv1': ..."), a shape helper deep inside may not.
template <typename F>
decltype(auto) in_layer(const Layer& layer, F&& fn) {
  try {
    return fn();
  } catch (const Error& e) {
    const std::string what = e.what();
    if (what.find("'" + layer.name() + "'") != std::string::npos) throw;
    throw Error(e.code(), layers::describe(layer) + ": " + what);
  }
}

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

// The full shape of a per-sample shape with a batch dim in front.
core::Shape batched(int64_t batch, const core::Shape& sample) {
  std::vector<int64_t> dims{batch};
  for (size_t i = 0; i < sample.ndim(); ++i) dims.push_back(sample[i]);
  return core::Shape(dims);
}

std::string batched_text(const core::Shape& sample) {
  std::string text = "(batch";
  for (size_t i = 0; i < sample.ndim(); ++i) text += ", " + std::to_string(sample[i]);
  return text + ")";
}

}  // namespace

// Where backward writes the gradient for one input of a node.
enum class GradRoute : uint8_t {
  kNone,        // a graph input: no gradient to the data
  kWrite,       // the first contribution (in backward order) to that value
  kAccumulate,  // a later one: written to scratch, then added
};

struct Net::Node {
  std::unique_ptr<Layer> layer;
  size_t spec_index = 0;              // in description_.layers
  std::vector<size_t> inputs;         // value ids
  std::vector<GradRoute> routes;      // per input
  std::vector<Parameter*> params;     // in param_specs() order
  std::vector<Parameter*> compute_params;  // their mixed-precision views
};

// The buffers of one batch size.
struct Net::Plan {
  int64_t batch = 0;
  std::vector<core::Shape> shapes;   // per value
  std::vector<core::NDArray> values;  // graph inputs: the caller's arrays of the latest forward
  // Allocated at the first backward of this batch size, so inference never pays for them.
  bool have_grads = false;
  std::vector<core::NDArray> grads;                 // per value; undefined for graph inputs
  std::vector<std::vector<core::NDArray>> scratch;  // per node and input, for kAccumulate routes
  // Host inputs and labels copied to a GPU net's device (see usable_on).
  std::vector<core::NDArray> staged_inputs;
  core::NDArray staged_labels;
  // Mixed precision: the inputs cast to the compute dtype, the logits cast
  // to float32 (output() and the loss), and the float32 loss gradient.
  std::vector<core::NDArray> cast_inputs;
  core::NDArray logits32;
  core::NDArray dlogits32;
};

Net::Net(NetDescription description, std::shared_ptr<core::Context> ctx)
    : description_(std::move(description)), ctx_(std::move(ctx)) {
  if (ctx_ == nullptr) throw Error(ErrorCode::kInvalidArgument, "net: no context");
  // A GPU net still owns a CPU engine: layers take it from the runtime, and a
  // layer without a GPU kernel reports kNotSupported itself, naming the layer.
  engine_ = std::make_unique<ops::cpu::CpuEngine>(ctx_->num_threads());
  runtime_.engine = engine_.get();
  build_graph();
  create_parameters();
  loss_ = std::make_unique<layers::SoftmaxCrossEntropyLoss>(description_.loss.reduction);
}

Net::~Net() = default;

void Net::build_graph() {
  const size_t num_inputs = description_.inputs.size();
  const size_t num_layers = description_.layers.size();

  // Graph inputs and layers share one namespace: a layer's "inputs" may name either.
  std::unordered_map<std::string, size_t> input_index;
  std::unordered_map<std::string, size_t> layer_index;
  for (size_t i = 0; i < num_inputs; ++i) {
    const std::string& name = description_.inputs[i].name;
    if (!input_index.emplace(name, i).second) {
      throw Error(ErrorCode::kInvalidArgument, "net: duplicate name " + in_quotes(name));
    }
  }
  for (size_t i = 0; i < num_layers; ++i) {
    const std::string& name = description_.layers[i].name;
    if (input_index.count(name) != 0 || !layer_index.emplace(name, i).second) {
      throw Error(ErrorCode::kInvalidArgument, "net: duplicate name " + in_quotes(name));
    }
  }

  // Kahn's algorithm, always taking the earliest ready layer of the
  // description, so a description already in order runs in that order.
  std::vector<std::vector<size_t>> consumers(num_layers);
  std::vector<size_t> pending(num_layers, 0);
  for (size_t i = 0; i < num_layers; ++i) {
    const LayerSpec& spec = description_.layers[i];
    for (const std::string& input : spec.inputs) {
      if (input_index.count(input) != 0) continue;
      const auto producer = layer_index.find(input);
      if (producer == layer_index.end()) {
        throw Error(ErrorCode::kInvalidArgument, "net: layer " + in_quotes(spec.name) + " reads " + in_quotes(input) +
                                                     ", which is neither a graph input nor a layer");
      }
      consumers[producer->second].push_back(i);
      ++pending[i];
    }
  }
  std::set<size_t> ready;
  for (size_t i = 0; i < num_layers; ++i) {
    if (pending[i] == 0) ready.insert(i);
  }
  std::vector<size_t> order;
  while (!ready.empty()) {
    const size_t next = *ready.begin();
    ready.erase(ready.begin());
    order.push_back(next);
    for (size_t consumer : consumers[next]) {
      if (--pending[consumer] == 0) ready.insert(consumer);
    }
  }
  if (order.size() != num_layers) {
    std::string stuck;
    for (size_t i = 0; i < num_layers; ++i) {
      if (pending[i] != 0) stuck += (stuck.empty() ? "" : ", ") + in_quotes(description_.layers[i].name);
    }
    throw Error(ErrorCode::kInvalidArgument, "net: the layers form a cycle; these depend on themselves or on "
                                             "a layer of the cycle: " + stuck);
  }

  std::vector<size_t> value_of_layer(num_layers);
  for (size_t k = 0; k < num_layers; ++k) value_of_layer[order[k]] = num_inputs + k;
  const auto value_of = [&](const std::string& name) {
    const auto input = input_index.find(name);
    return input != input_index.end() ? input->second : value_of_layer[layer_index.at(name)];
  };

  const auto output = layer_index.find(description_.output);
  if (output == layer_index.end()) {
    throw Error(ErrorCode::kInvalidArgument, "net: the output " + in_quotes(description_.output) + " is not a layer");
  }
  output_value_ = value_of_layer[output->second];

  nodes_.resize(num_layers);
  for (size_t k = 0; k < num_layers; ++k) {
    Node& node = nodes_[k];
    LayerSpec& spec = description_.layers[order[k]];
    node.spec_index = order[k];
    node.layer = create_layer(spec.type, spec.name, spec.attributes);
    for (const std::string& input : spec.inputs) node.inputs.push_back(value_of(input));
    if (node.inputs.size() != node.layer->num_inputs()) {
      throw Error(ErrorCode::kInvalidArgument, "net: " + layers::describe(*node.layer) + " takes " +
                                                   std::to_string(node.layer->num_inputs()) + " input(s), got " +
                                                   std::to_string(node.inputs.size()));
    }
    // The layer's own view (its type spelling, every default made explicit)
    // is what to_json() writes, so a rebuilt net is the same net.
    spec.type = node.layer->type();
    spec.attributes = node.layer->attributes();
    for (const char* reserved : {"name", "type", "inputs"}) {
      if (spec.attributes.contains(reserved)) {
        throw Error(ErrorCode::kInternal, "net: " + layers::describe(*node.layer) +
                                              " reports an attribute named \"" + reserved + "\"");
      }
    }
  }

  // Every layer must feed the loss and every graph input must be read;
  // anything else is a mistake in the description (and a layer outside the
  // loss's reach would get no gradient to run backward with).
  std::vector<bool> reaches(num_inputs + num_layers, false);
  reaches[output_value_] = true;
  for (size_t k = num_layers; k-- > 0;) {
    if (!reaches[num_inputs + k]) {
      throw Error(ErrorCode::kInvalidArgument, "net: layer " + in_quotes(nodes_[k].layer->name()) +
                                                   " does not lead to the output " + in_quotes(description_.output));
    }
    for (size_t v : nodes_[k].inputs) reaches[v] = true;
  }
  for (size_t i = 0; i < num_inputs; ++i) {
    if (!reaches[i]) {
      throw Error(ErrorCode::kInvalidArgument,
                  "net: no layer reads the graph input " + in_quotes(description_.inputs[i].name));
    }
  }

  // Backward runs the loss, then the nodes in reverse: the first to reach a
  // value writes its gradient, later ones (residual branches) add theirs.
  std::vector<bool> written(num_inputs + num_layers, false);
  written[output_value_] = true;
  for (size_t k = num_layers; k-- > 0;) {
    Node& node = nodes_[k];
    for (size_t v : node.inputs) {
      if (v < num_inputs) {
        node.routes.push_back(GradRoute::kNone);
      } else if (!written[v]) {
        node.routes.push_back(GradRoute::kWrite);
        written[v] = true;
      } else {
        node.routes.push_back(GradRoute::kAccumulate);
      }
    }
  }
}

void Net::create_parameters() {
  // Shape inference at batch 1: parameter shapes depend on per-sample dims only.
  const size_t num_inputs = description_.inputs.size();
  std::vector<core::Shape> shapes(num_inputs + nodes_.size());
  for (size_t i = 0; i < num_inputs; ++i) shapes[i] = batched(1, description_.inputs[i].shape);
  std::vector<std::vector<ParamSpec>> specs_of_node(nodes_.size());
  for (size_t k = 0; k < nodes_.size(); ++k) {
    const Layer& layer = *nodes_[k].layer;
    std::vector<core::Shape> in;
    for (size_t v : nodes_[k].inputs) in.push_back(shapes[v]);
    shapes[num_inputs + k] = in_layer(layer, [&] { return layer.output_shape(in); });
    specs_of_node[k] = in_layer(layer, [&] { return layer.param_specs(in); });
  }
  const core::Shape& logits = shapes[output_value_];
  if (logits.ndim() != 2) {
    throw Error(ErrorCode::kInvalidArgument, "net: the output " + in_quotes(description_.output) + " has shape " +
                                                 logits.to_string() + " at batch 1; the loss needs (batch, classes)");
  }

  std::vector<size_t> node_of_spec(nodes_.size());
  for (size_t k = 0; k < nodes_.size(); ++k) node_of_spec[nodes_[k].spec_index] = k;
  std::vector<std::pair<size_t, size_t>> owner;  // (node, position in its specs) per parameter
  std::set<std::string> names;
  for (size_t s = 0; s < nodes_.size(); ++s) {
    const size_t k = node_of_spec[s];
    for (size_t j = 0; j < specs_of_node[k].size(); ++j) {
      const ParamSpec& spec = specs_of_node[k][j];
      Parameter param;
      param.name = nodes_[k].layer->name() + "." + spec.suffix;
      if (!names.insert(param.name).second) {
        throw Error(ErrorCode::kInvalidArgument, "net: two parameters are named " + in_quotes(param.name) +
                                                     "; rename one of the layers");
      }
      param.value = core::NDArray::zeros(ctx_, core::DType::kFloat32, spec.shape);
      param.auxiliary = spec.auxiliary;
      if (spec.auxiliary) {
        param.grad_req = GradReq::kNull;
      } else {
        param.grad = core::NDArray::zeros(ctx_, core::DType::kFloat32, spec.shape);
      }
      param.init = spec.init;
      params_.push_back(std::move(param));
      param_in_compute_dtype_.push_back(spec.in_compute_dtype);
      owner.emplace_back(k, j);
    }
  }
  // Pointers only now that params_ no longer grows.
  for (size_t k = 0; k < nodes_.size(); ++k) nodes_[k].params.resize(specs_of_node[k].size());
  for (size_t p = 0; p < params_.size(); ++p) nodes_[owner[p].first].params[owner[p].second] = &params_[p];
}

std::vector<std::string> Net::topological_order() const {
  std::vector<std::string> names;
  for (const Node& node : nodes_) names.push_back(node.layer->name());
  return names;
}

void Net::initialize(uint64_t seed) {
  // Initialisers draw on the host; a GPU net gets the very same values by
  // filling a host array and copying it over, so CPU and GPU nets with one
  // seed start from identical weights.
  const auto cpu = ctx_->is_cpu() ? ctx_ : core::make_cpu_context();
  for (Parameter& param : params_) {
    if (ctx_->is_cpu()) {
      param.init.fill(param.value, seed, param.name);
      continue;
    }
    const core::NDArray host = core::NDArray::empty(cpu, param.value.dtype(), param.value.shape());
    param.init.fill(host, seed, param.name);
    param.value.copy_from(host);
  }
  runtime_.seed = seed;
  // Dropout masks replay from the seed: initialising again starts them over.
  runtime_.step = 0;
}

size_t Net::param_index(const std::string& name) const {
  for (size_t i = 0; i < params_.size(); ++i) {
    if (params_[i].name == name) return i;
  }
  throw Error(ErrorCode::kNotFound, "net has no parameter " + in_quotes(name));
}

void Net::set_grad_req(const std::string& name, GradReq req) {
  Parameter& param = params_[param_index(name)];
  if (param.auxiliary) {
    throw Error(ErrorCode::kInvalidArgument, in_quotes(name) + " is an auxiliary state and has no gradient");
  }
  param.grad_req = req;
}

void Net::set_grad_req(GradReq req) {
  for (Parameter& param : params_) {
    if (!param.auxiliary) param.grad_req = req;
  }
}

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

void Net::forward(const std::vector<core::NDArray>& inputs, bool train) {
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
    in_layer(*node.layer, [&] { node.layer->forward(args); });
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
    in_layer(*node.layer, [&] { node.layer->backward(args); });
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

void Net::set_loss_reduction(const std::string& reduction) {
  loss_ = std::make_unique<layers::SoftmaxCrossEntropyLoss>(reduction);
  description_.loss.reduction = reduction;
}

const core::NDArray& Net::output(size_t index) const {
  if (index >= num_outputs()) {
    throw Error(ErrorCode::kInvalidArgument, "output index " + std::to_string(index) + " is outside the " +
                                                 std::to_string(num_outputs()) + " output(s)");
  }
  if (last_forward_ == nullptr) throw Error(ErrorCode::kBadState, "net: no output before a completed forward");
  return mixed_precision() ? last_forward_->logits32 : last_forward_->values[output_value_];
}

void Net::set_compute_dtype(core::DType dtype) {
  MixedPrecisionPolicy::check_compute_dtype(dtype);
  if (forwarded_) {
    throw Error(ErrorCode::kBadState, "net: set the compute dtype before the first forward");
  }
  MixedPrecisionPolicy::check_supported_on(dtype, *ctx_);
  if (dtype == core::DType::kFloat32) {
    compute_params_.reset();
    for (Node& node : nodes_) node.compute_params.clear();
  } else {
    auto views = std::make_unique<ComputeParameters>(params_, param_in_compute_dtype_, dtype);
    for (Node& node : nodes_) {
      node.compute_params.clear();
      for (const Parameter* p : node.params) {
        node.compute_params.push_back(&views->view(static_cast<size_t>(p - params_.data())));
      }
    }
    compute_params_ = std::move(views);
  }
  precision_.set_compute_dtype(dtype);
}

bool Net::gradients_finite() {
  std::vector<const Parameter*> checked;
  for (const Parameter& p : params_) {
    if (!p.auxiliary && p.grad_req != GradReq::kNull) checked.push_back(&p);
  }
  if (ctx_->is_cpu()) {
    for (const Parameter* p : checked) {
      const float* g = p->grad.data_as<float>();
      for (size_t i = 0; i < p->grad.size(); ++i) {
        if (!std::isfinite(g[i])) return false;
      }
    }
    return true;
  }
#if DT_WITH_CUDA
  if (!nonfinite_flag_.defined()) nonfinite_flag_ = core::NDArray::empty(ctx_, core::DType::kInt32, core::Shape{1});
  ops::fill(nonfinite_flag_, 0.0);
  auto* flag = static_cast<unsigned int*>(nonfinite_flag_.data());
  for (const Parameter* p : checked) ops::cuda::flag_nonfinite(*ctx_, p->grad.data_as<float>(), p->grad.size(), flag);
  int32_t found = 0;
  nonfinite_flag_.copy_to_host(&found, sizeof found);
  return found == 0;
#else
  throw Error(ErrorCode::kInternal, "net: a GPU context in a build without CUDA");
#endif
}

void Net::save_params(const std::string& path) const {
  core::NamedArrays arrays;
  arrays.reserve(params_.size());
  for (const Parameter& param : params_) arrays.emplace_back(param.name, param.value);
  core::save_safetensors(path, arrays);
}

void Net::load_params(const std::string& path) {
  const core::SafetensorsContents contents = core::load_safetensors(path, ctx_);
  std::map<std::string, const core::NDArray*> by_name;
  for (const auto& [name, array] : contents.arrays) by_name.emplace(name, &array);
  // Everything is checked before anything is copied, so a bad file leaves
  // the net as it was.
  std::vector<const core::NDArray*> sources;
  for (const Parameter& param : params_) {
    const auto found = by_name.find(param.name);
    if (found == by_name.end()) {
      throw Error(ErrorCode::kNotFound, path + " has no parameter " + in_quotes(param.name));
    }
    const core::NDArray& source = *found->second;
    if (source.shape() != param.value.shape() || source.dtype() != param.value.dtype()) {
      throw Error(ErrorCode::kShapeMismatch,
                  path + ": parameter " + in_quotes(param.name) + " is " + core::dtype_name(source.dtype()) + " " +
                      source.shape().to_string() + ", the net's is " + core::dtype_name(param.value.dtype()) +
                      " " + param.value.shape().to_string());
    }
    sources.push_back(&source);
  }
  for (size_t i = 0; i < params_.size(); ++i) params_[i].value.copy_from(*sources[i]);
}

std::unique_ptr<Net> Net::clone(std::shared_ptr<core::Context> ctx) const {
  auto copy = std::make_unique<Net>(description_, std::move(ctx));
  for (size_t i = 0; i < params_.size(); ++i) {
    copy->params_[i].value.copy_from(params_[i].value);
    copy->params_[i].grad_req = params_[i].grad_req;
  }
  copy->runtime_.seed = runtime_.seed;
  // A replica computes as this net does, with a scaler in the same state
  // (a trainer keeps all replicas' scalers in step).
  if (precision_.mixed()) copy->set_compute_dtype(precision_.compute_dtype());
  copy->precision_ = precision_;
  return copy;
}

std::unique_ptr<Net> net_from_json(const std::string& text, std::shared_ptr<core::Context> ctx) {
  return std::make_unique<Net>(parse_net_description(text), std::move(ctx));
}

}  // namespace dt::nn
