// The JSON description of a network (docs/net-json.md): graph inputs with
// their per-sample shapes, layers with their inputs and attributes, the
// output and the loss. Net is built from one and writes one back, so a net
// made by a model builder, by hand or by another program round-trips.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/shape.h"

namespace dt::nn {

constexpr const char* kNetFormat = "disttrain.net";
constexpr int kNetFormatVersion = 1;

struct NetInputSpec {
  std::string name;
  core::Shape shape;  // per sample: without the batch dim

  bool operator==(const NetInputSpec& other) const { return name == other.name && shape == other.shape; }
};

struct LayerSpec {
  std::string name;
  std::string type;                 // as create_layer() knows it: "Conv2D", ...
  std::vector<std::string> inputs;  // names of graph inputs or earlier layers
  nlohmann::json attributes = nlohmann::json::object();

  bool operator==(const LayerSpec& other) const {
    return name == other.name && type == other.type && inputs == other.inputs && attributes == other.attributes;
  }
};

struct LossSpec {
  std::string type = "SoftmaxCrossEntropy";  // the one loss so far
  std::string reduction = "mean";            // "mean" or "sum" over the batch

  bool operator==(const LossSpec& other) const { return type == other.type && reduction == other.reduction; }
};

struct NetDescription {
  std::vector<NetInputSpec> inputs;
  std::vector<LayerSpec> layers;
  std::string output;  // the layer whose output the loss reads
  LossSpec loss;

  bool operator==(const NetDescription& other) const {
    return inputs == other.inputs && layers == other.layers && output == other.output && loss == other.loss;
  }
  bool operator!=(const NetDescription& other) const { return !(*this == other); }
};

// Parses a description. Layer inputs left out default to the previous
// layer (the single graph input for the first layer); "output" left out is
// the last layer; "loss" left out is mean softmax cross-entropy. Malformed
// JSON (with its line and column), missing or mistyped fields and unknown
// keys are Error(kInvalidArgument); another format version is
// Error(kNotSupported). Layer attributes are passed through unchecked:
// create_layer() judges them when the net is built.
NetDescription parse_net_description(const std::string& text);
NetDescription net_description_from_json(const nlohmann::json& json);

// The description with every field explicit (layer inputs included), so
// parse_net_description(net_description_to_text(d)) == d. Layer attributes
// are written as given: Net stores each layer's own attributes() there, so
// they are complete too. Attributes named "name", "type" or "inputs" cannot
// be written (Net rejects layers that report them).
nlohmann::ordered_json net_description_to_json(const NetDescription& description);
std::string net_description_to_text(const NetDescription& description);  // indented by 2

}  // namespace dt::nn
