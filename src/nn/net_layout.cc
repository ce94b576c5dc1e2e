#include "nn/net_layout.h"

#include <exception>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/parameter_table.h"
#include "nn/layer.h"
#include "nn/net_internals.h"

namespace dt::nn {
namespace {

using ops::TensorLayout;

// How a layer treats the layout of its 4-d inputs.
enum class Role {
  kLayoutAware,  // takes a `layout` attribute
  kElementwise,  // any layout: its output has its input's
  kConvert,      // LayoutConvert: reads "from", writes "to"
  kNchwOnly,     // everything else
};

Role role_of(const LayerSpec& spec, bool input_is_4d) {
  for (const char* t : {"Conv2D", "MaxPool2D", "AvgPool2D", "GlobalAvgPool2D"}) {
    if (spec.type == t) return Role::kLayoutAware;
  }
  if (spec.type == "BatchNorm") return input_is_4d ? Role::kLayoutAware : Role::kNchwOnly;
  for (const char* t : {"ReLU", "Sigmoid", "Tanh", "Activation", "Dropout", "Add"}) {
    if (spec.type == t) return Role::kElementwise;
  }
  return spec.type == "LayoutConvert" ? Role::kConvert : Role::kNchwOnly;
}

// Whether the layer flattens each sample, so that both layouts of a value
// whose bytes agree give it the same input.
bool flattens(const LayerSpec& spec) {
  return spec.type == "Flatten" ||
         (spec.type == "Dense" && !(spec.attributes.contains("flatten") && spec.attributes["flatten"] == false));
}

core::Shape batched(const core::Shape& sample) {
  std::vector<int64_t> dims{1};
  for (size_t i = 0; i < sample.ndim(); ++i) dims.push_back(sample[i]);
  return core::Shape(dims);
}

class Rewrite {
 public:
  explicit Rewrite(const NetDescription& d) : d_(d), before_(d.layers.size()) {
    for (const NetInputSpec& in : d.inputs) {
      names_.insert(in.name);
      shape_[in.name] = batched(in.shape);
      layout_[in.name] = TensorLayout::kNCHW;
    }
    for (const LayerSpec& spec : d.layers) names_.insert(spec.name);
  }

  // Empty when a layer's shape cannot be inferred (the net then reports it).
  std::optional<NetDescription> run(const std::vector<size_t>& order) {
    std::vector<LayerSpec> rewritten(d_.layers.size());
    for (size_t i : order) {
      std::optional<LayerSpec> spec = rewrite(i);
      if (!spec) return std::nullopt;
      rewritten[i] = std::move(*spec);
    }
    NetDescription out = d_;
    out.layers.clear();
    for (size_t i = 0; i < rewritten.size(); ++i) {
      for (LayerSpec& convert : before_[i]) out.layers.push_back(std::move(convert));
      out.layers.push_back(std::move(rewritten[i]));
    }
    return out;
  }

 private:
  bool is_4d(const std::string& value) const { return shape_.at(value).ndim() == 4; }

  std::optional<LayerSpec> rewrite(size_t i) {
    LayerSpec spec = d_.layers[i];
    if (spec.inputs.empty()) return std::nullopt;
    const Role role = role_of(spec, is_4d(spec.inputs.at(0)));
    TensorLayout want = TensorLayout::kNCHW;
    if (role == Role::kLayoutAware) {
      if (!spec.attributes.contains("layout")) spec.attributes["layout"] = ops::layout_name(TensorLayout::kNHWC);
      want = ops::parse_layout(spec.attributes["layout"].get<std::string>(), spec.name);
    } else if (role == Role::kConvert) {
      want = ops::parse_layout(spec.attributes.at("from").get<std::string>(), spec.name);
    } else if (role == Role::kElementwise) {
      want = layout_.count(spec.inputs[0]) != 0 ? layout_.at(spec.inputs[0]) : TensorLayout::kNCHW;
    }
    std::vector<core::Shape> in;
    for (std::string& input : spec.inputs) {
      if (is_4d(input) && layout_.at(input) != want && !(role == Role::kNchwOnly && flattens(spec) && same_bytes(input))) {
        input = converted(input, want, i);
      }
      in.push_back(shape_.at(input));
    }
    try {
      shape_[spec.name] = create_layer(spec.type, spec.name, spec.attributes)->output_shape(in);
    } catch (const std::exception&) {
      return std::nullopt;
    }
    if (shape_[spec.name].ndim() == 4) {
      layout_[spec.name] = role == Role::kConvert
                               ? ops::parse_layout(spec.attributes.at("to").get<std::string>(), spec.name)
                               : want;
    }
    return spec;
  }

  // Whether NCHW and NHWC hold value's elements in the same order.
  bool same_bytes(const std::string& value) const {
    const ops::LogicalDims d = ops::logical_dims(layout_.at(value), shape_.at(value));
    return d.C == 1 || d.H * d.W == 1;
  }

  // The name of value in layout `to`, converted once before the first
  // layer (i, in execution order) that needs it.
  std::string converted(const std::string& value, TensorLayout to, size_t i) {
    const auto key = std::make_pair(value, to);
    const auto it = converted_.find(key);
    if (it != converted_.end()) return it->second;
    std::string name = value + (to == TensorLayout::kNHWC ? "_to_nhwc" : "_to_nchw");
    while (!names_.insert(name).second) name += "_";
    const ops::LogicalDims d = ops::logical_dims(layout_.at(value), shape_.at(value));
    before_[i].push_back(LayerSpec{name, "LayoutConvert", {value},
                                   {{"from", ops::layout_name(layout_.at(value))}, {"to", ops::layout_name(to)}}});
    shape_[name] = ops::layout_shape(to, d.N, d.C, d.H, d.W);
    layout_[name] = to;
    converted_.emplace(key, name);
    return name;
  }

  const NetDescription& d_;
  std::vector<std::vector<LayerSpec>> before_;  // conversions to insert before layer i
  std::set<std::string> names_;
  std::unordered_map<std::string, core::Shape> shape_;
  std::unordered_map<std::string, TensorLayout> layout_;  // of every 4-d value
  std::map<std::pair<std::string, TensorLayout>, std::string> converted_;
};

}  // namespace

NetDescription with_activation_layout(const NetDescription& d, TensorLayout layout) {
  if (layout == TensorLayout::kNCHW) return d;
  std::vector<size_t> order;
  try {
    order = order_layers(d).order;
  } catch (const core::Error&) {
    return d;
  }
  std::optional<NetDescription> rewritten = Rewrite(d).run(order);
  return rewritten ? std::move(*rewritten) : d;
}

TensorLayout activation_layout_from_environment() {
  const char* text = core::read_parameter("DT_CONV_LAYOUT");
  if (text == nullptr || *text == '\0') return TensorLayout::kNCHW;
  return ops::parse_layout(text, "DT_CONV_LAYOUT");
}

}  // namespace dt::nn
