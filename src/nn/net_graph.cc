#include "nn/net.h"

// Net: the graph from the description (names, topological order, the
// routes gradients take back) and its parameters by shape inference.

#include <set>
#include <unordered_map>

#include "nn/net_internals.h"

namespace dt::nn {

using core::Error;
using core::ErrorCode;

namespace {

// The full shape of a per-sample shape with a batch dim in front.
core::Shape batched(int64_t batch, const core::Shape& sample) {
  std::vector<int64_t> dims{batch};
  for (size_t i = 0; i < sample.ndim(); ++i) dims.push_back(sample[i]);
  return core::Shape(dims);
}

}  // namespace

LayerOrder order_layers(const NetDescription& description) {
  const size_t num_inputs = description.inputs.size();
  const size_t num_layers = description.layers.size();
  LayerOrder out;

  // Graph inputs and layers share one namespace: a layer's "inputs" may name either.
  for (size_t i = 0; i < num_inputs; ++i) {
    const std::string& name = description.inputs[i].name;
    if (!out.input_index.emplace(name, i).second) {
      throw Error(ErrorCode::kInvalidArgument, "net: duplicate name " + in_quotes(name));
    }
  }
  for (size_t i = 0; i < num_layers; ++i) {
    const std::string& name = description.layers[i].name;
    if (out.input_index.count(name) != 0 || !out.layer_index.emplace(name, i).second) {
      throw Error(ErrorCode::kInvalidArgument, "net: duplicate name " + in_quotes(name));
    }
  }

  // Kahn's algorithm, always taking the earliest ready layer of the
  // description, so a description already in order runs in that order.
  std::vector<std::vector<size_t>> consumers(num_layers);
  std::vector<size_t> pending(num_layers, 0);
  for (size_t i = 0; i < num_layers; ++i) {
    const LayerSpec& spec = description.layers[i];
    for (const std::string& input : spec.inputs) {
      if (out.input_index.count(input) != 0) continue;
      const auto producer = out.layer_index.find(input);
      if (producer == out.layer_index.end()) {
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
  while (!ready.empty()) {
    const size_t next = *ready.begin();
    ready.erase(ready.begin());
    out.order.push_back(next);
    for (size_t consumer : consumers[next]) {
      if (--pending[consumer] == 0) ready.insert(consumer);
    }
  }
  if (out.order.size() != num_layers) {
    std::string stuck;
    for (size_t i = 0; i < num_layers; ++i) {
      if (pending[i] != 0) stuck += (stuck.empty() ? "" : ", ") + in_quotes(description.layers[i].name);
    }
    throw Error(ErrorCode::kInvalidArgument, "net: the layers form a cycle; these depend on themselves or on "
                                             "a layer of the cycle: " + stuck);
  }
  return out;
}

void Net::build_graph() {
  const size_t num_inputs = description_.inputs.size();
  const size_t num_layers = description_.layers.size();
  const LayerOrder graph = order_layers(description_);
  const std::unordered_map<std::string, size_t>& input_index = graph.input_index;
  const std::unordered_map<std::string, size_t>& layer_index = graph.layer_index;
  const std::vector<size_t>& order = graph.order;

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

}  // namespace dt::nn
