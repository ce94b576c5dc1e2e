// What the files of Net share (net.cc, net_graph.cc, net_memory_plan.cc,
// net_execution.cc, net_parameter_file.cc): the node and plan types that
// net.h only declares, and the helpers their messages use. Private to
// src/nn; users include nn/net.h.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/error.h"
#include "core/ndarray.h"
#include "nn/layer.h"
#include "nn/layers/layer_support.h"
#include "nn/net.h"

namespace dt::nn {

inline std::string in_quotes(const std::string& name) { return "\"" + name + "\""; }

// The layers of a description in an order where each comes after the
// layers it reads (Kahn's, always the earliest ready layer of the
// description), with the index of every input and layer name.
// Error(kInvalidArgument) for a duplicate name, an input that names
// nothing, or a cycle.
struct LayerOrder {
  std::unordered_map<std::string, size_t> input_index;
  std::unordered_map<std::string, size_t> layer_index;
  std::vector<size_t> order;
};
LayerOrder order_layers(const NetDescription& description);

// Runs fn, making sure an Error names the layer: the layers' own messages
// do ("Conv2D 'conv1': ..."), a shape helper deep inside may not.
template <typename F>
decltype(auto) in_layer(const Layer& layer, F&& fn) {
  try {
    return fn();
  } catch (const core::Error& e) {
    const std::string what = e.what();
    if (what.find("'" + layer.name() + "'") != std::string::npos) throw;
    throw core::Error(e.code(), layers::describe(layer) + ": " + what);
  }
}

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

}  // namespace dt::nn
