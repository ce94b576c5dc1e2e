#include "nn/net_description.h"


#include "core/error.h"

namespace dt::nn {

using core::Error;
using core::ErrorCode;
using nlohmann::json;

namespace {

[[noreturn]] void invalid(const std::string& message) {
  throw Error(ErrorCode::kInvalidArgument, "net description: " + message);
}

// nlohmann's messages start with "[json.exception.parse_error.101] "; the
// rest ("parse error at line 3, column 7: ...") is what a user needs.
std::string without_exception_tag(const std::string& what) {
  const auto end = what.find("] ");
  return what.rfind("[json.exception.", 0) == 0 && end != std::string::npos ? what.substr(end + 2) : what;
}

const json& required(const json& object, const char* key, const std::string& where) {
  const auto it = object.find(key);
  if (it == object.end()) invalid(where + " has no \"" + key + "\"");
  return *it;
}

// For a literal place name: the std::string made here lives only within the
// call, so a caller binding the result to a reference binds no temporary of
// its own (GCC 13's -Wdangling-reference warned at every such call).
const json& required(const json& object, const char* key, const char* where) {
  return required(object, key, std::string(where));
}

std::string string_field(const json& value, const std::string& where) {
  if (!value.is_string()) invalid(where + " must be a string, not " + value.type_name());
  std::string text = value.get<std::string>();
  if (text.empty()) invalid(where + " must not be empty");
  return text;
}

void reject_unknown_keys(const json& object, std::initializer_list<const char*> known, const std::string& where) {
  for (const auto& item : object.items()) {
    bool found = false;
    for (const char* key : known) found = found || item.key() == key;
    if (!found) invalid(where + " has an unknown key \"" + item.key() + "\"");
  }
}

core::Shape sample_shape(const json& value, const std::string& where) {
  if (!value.is_array() || value.empty()) invalid(where + " must be a non-empty list of dims");
  // One dim stays free for the batch.
  if (value.size() + 1 > core::kMaxNDim) {
    invalid(where + " has " + std::to_string(value.size()) + " dims; at most " + std::to_string(core::kMaxNDim - 1) +
            " fit beside the batch dim");
  }
  std::vector<int64_t> dims;
  for (const auto& dim : value) {
    if (!dim.is_number_integer() || (dim.is_number_unsigned() && dim.get<uint64_t>() > INT64_MAX) ||
        dim.get<int64_t>() <= 0) {
      invalid(where + " must hold positive integers, not " + dim.dump());
    }
    dims.push_back(dim.get<int64_t>());
  }
  return core::Shape(dims);
}

NetInputSpec parse_input(const json& value, size_t index) {
  const std::string where = "inputs[" + std::to_string(index) + "]";
  if (!value.is_object()) invalid(where + " must be an object");
  reject_unknown_keys(value, {"name", "shape"}, where);
  NetInputSpec input;
  input.name = string_field(required(value, "name", where), where + ".name");
  input.shape = sample_shape(required(value, "shape", where), where + ".shape");
  return input;
}

LayerSpec parse_layer(const json& value, size_t index, const std::vector<NetInputSpec>& graph_inputs,
                      const std::vector<LayerSpec>& earlier) {
  std::string where = "layers[" + std::to_string(index) + "]";
  if (!value.is_object()) invalid(where + " must be an object");
  LayerSpec layer;
  layer.name = string_field(required(value, "name", where), where + ".name");
  where += " (\"" + layer.name + "\")";
  layer.type = string_field(required(value, "type", where), where + ".type");
  const auto inputs = value.find("inputs");
  if (inputs != value.end()) {
    if (!inputs->is_array() || inputs->empty()) invalid(where + ".inputs must be a non-empty list of names");
    for (size_t i = 0; i < inputs->size(); ++i) {
      layer.inputs.push_back(string_field((*inputs)[i], where + ".inputs[" + std::to_string(i) + "]"));
    }
  } else if (!earlier.empty()) {
    layer.inputs = {earlier.back().name};
  } else if (graph_inputs.size() == 1) {
    layer.inputs = {graph_inputs.front().name};
  } else {
    invalid(where + " is the first layer of a net with " + std::to_string(graph_inputs.size()) +
            " inputs and must list its \"inputs\"");
  }
  for (const auto& item : value.items()) {
    if (item.key() != "name" && item.key() != "type" && item.key() != "inputs") {
      layer.attributes[item.key()] = item.value();
    }
  }
  return layer;
}

LossSpec parse_loss(const json& value) {
  if (!value.is_object()) invalid("\"loss\" must be an object");
  reject_unknown_keys(value, {"type", "reduction"}, "loss");
  LossSpec loss;
  if (value.contains("type")) loss.type = string_field(value["type"], "loss.type");
  if (loss.type != "SoftmaxCrossEntropy") {
    invalid("unknown loss type \"" + loss.type + "\" (known: SoftmaxCrossEntropy)");
  }
  if (value.contains("reduction")) loss.reduction = string_field(value["reduction"], "loss.reduction");
  if (loss.reduction != "mean" && loss.reduction != "sum") {
    invalid("loss.reduction must be \"mean\" or \"sum\", not \"" + loss.reduction + "\"");
  }
  return loss;
}

}  // namespace

NetDescription net_description_from_json(const json& in) {
  if (!in.is_object()) invalid(std::string("must be a JSON object, not ") + in.type_name());
  reject_unknown_keys(in, {"format", "version", "inputs", "layers", "output", "loss"}, "the description");

  const json& format = required(in, "format", "the description");
  if (!format.is_string() || format.get<std::string>() != kNetFormat) {
    invalid(std::string("\"format\" must be \"") + kNetFormat + "\", not " + format.dump());
  }
  const json& version = required(in, "version", "the description");
  if (!version.is_number_integer()) invalid("\"version\" must be an integer, not " + version.dump());
  if (version.get<int64_t>() != kNetFormatVersion) {
    throw Error(ErrorCode::kNotSupported, "net description: version " + version.dump() +
                                              " is not supported; this build reads version " +
                                              std::to_string(kNetFormatVersion));
  }

  NetDescription description;
  const json& inputs = required(in, "inputs", "the description");
  if (!inputs.is_array() || inputs.empty()) invalid("\"inputs\" must be a non-empty list");
  for (size_t i = 0; i < inputs.size(); ++i) description.inputs.push_back(parse_input(inputs[i], i));

  const json& layers = required(in, "layers", "the description");
  if (!layers.is_array() || layers.empty()) invalid("\"layers\" must be a non-empty list");
  for (size_t i = 0; i < layers.size(); ++i) {
    description.layers.push_back(parse_layer(layers[i], i, description.inputs, description.layers));
  }

  const auto output = in.find("output");
  description.output =
      output != in.end() ? string_field(*output, "\"output\"") : description.layers.back().name;
  const auto loss = in.find("loss");
  if (loss != in.end()) description.loss = parse_loss(*loss);
  return description;
}

NetDescription parse_net_description(const std::string& text) {
  json in;
  try {
    in = json::parse(text);
  } catch (const json::exception& e) {
    // parse_error, and out_of_range for a number beyond a double (1e999).
    invalid("not valid JSON: " + without_exception_tag(e.what()));
  }
  return net_description_from_json(in);
}

nlohmann::ordered_json net_description_to_json(const NetDescription& description) {
  // Ordered, so that the text reads as written by hand: format first, each
  // layer's name, type and inputs before its attributes.
  using ordered = nlohmann::ordered_json;
  ordered out = ordered::object();
  out["format"] = kNetFormat;
  out["version"] = kNetFormatVersion;
  ordered inputs = ordered::array();
  for (const auto& input : description.inputs) {
    ordered entry = ordered::object();
    entry["name"] = input.name;
    entry["shape"] = input.shape.to_vector();
    inputs.push_back(std::move(entry));
  }
  out["inputs"] = std::move(inputs);
  ordered layers = ordered::array();
  for (const auto& layer : description.layers) {
    ordered entry = ordered::object();
    entry["name"] = layer.name;
    entry["type"] = layer.type;
    entry["inputs"] = layer.inputs;
    for (const auto& item : layer.attributes.items()) entry[item.key()] = ordered(item.value());
    layers.push_back(std::move(entry));
  }
  out["layers"] = std::move(layers);
  out["output"] = description.output;
  ordered loss = ordered::object();
  loss["type"] = description.loss.type;
  loss["reduction"] = description.loss.reduction;
  out["loss"] = std::move(loss);
  return out;
}

std::string net_description_to_text(const NetDescription& description) {
  return net_description_to_json(description).dump(2);
}

}  // namespace dt::nn
