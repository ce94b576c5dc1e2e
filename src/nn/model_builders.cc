#include "nn/model_builders.h"

#include "core/error.h"

namespace dt::nn {

using core::Error;
using core::ErrorCode;
using nlohmann::json;

namespace {

[[noreturn]] void invalid(const std::string& builder, const std::string& message) {
  throw Error(ErrorCode::kInvalidArgument, "model \"" + builder + "\": " + message);
}

// Reads a builder's options, rejecting keys it does not know so that a
// misspelt "clases" does not silently train a 10-class net.
class Options {
 public:
  Options(std::string builder, const json& options, std::initializer_list<const char*> known)
      : builder_(std::move(builder)), options_(options) {
    if (options_.is_null()) return;
    if (!options_.is_object()) invalid(builder_, std::string("options must be a JSON object, not ") + options_.type_name());
    for (const auto& item : options_.items()) {
      bool found = false;
      std::string list;
      for (const char* key : known) {
        found = found || item.key() == key;
        list += (list.empty() ? "" : ", ") + std::string(key);
      }
      if (!found) invalid(builder_, "unknown option \"" + item.key() + "\" (known: " + list + ")");
    }
  }

  int64_t positive_int(const char* key, int64_t fallback) const {
    const json* value = find(key);
    if (value == nullptr) return fallback;
    return positive(*value, key);
  }

  std::vector<int64_t> int_list(const char* key, std::vector<int64_t> fallback, bool allow_empty) const {
    const json* value = find(key);
    if (value == nullptr) return fallback;
    if (!value->is_array() || (!allow_empty && value->empty())) {
      invalid(builder_, "\"" + std::string(key) + "\" must be a " + (allow_empty ? "" : "non-empty ") +
                            "list of positive integers, not " + value->dump());
    }
    std::vector<int64_t> list;
    for (const auto& item : *value) list.push_back(positive(item, key));
    return list;
  }

  // input_shape of `ndim` dims (0: any count that leaves room for the batch).
  std::vector<int64_t> input_shape(std::vector<int64_t> fallback, size_t ndim) const {
    std::vector<int64_t> shape = int_list("input_shape", std::move(fallback), false);
    if (ndim != 0 && shape.size() != ndim) {
      invalid(builder_, "\"input_shape\" must have " + std::to_string(ndim) + " dims (channels, height, width), not " +
                            std::to_string(shape.size()));
    }
    if (shape.size() + 1 > core::kMaxNDim) {
      invalid(builder_, "\"input_shape\" has " + std::to_string(shape.size()) + " dims; at most " +
                            std::to_string(core::kMaxNDim - 1) + " fit beside the batch dim");
    }
    return shape;
  }

  // The JSON layer type of an activation name.
  std::string activation(const char* fallback) const {
    const json* value = find("activation");
    const std::string name = value == nullptr ? fallback : (value->is_string() ? value->get<std::string>() : "");
    if (name == "relu") return "ReLU";
    if (name == "tanh") return "Tanh";
    if (name == "sigmoid") return "Sigmoid";
    invalid(builder_, "\"activation\" must be \"relu\", \"tanh\" or \"sigmoid\", not " + value->dump());
  }

 private:
  const json* find(const char* key) const {
    if (options_.is_null()) return nullptr;
    const auto it = options_.find(key);
    return it == options_.end() ? nullptr : &*it;
  }

  int64_t positive(const json& value, const char* key) const {
    if (!value.is_number_integer() || (value.is_number_unsigned() && value.get<uint64_t>() > INT64_MAX) ||
        value.get<int64_t>() <= 0) {
      invalid(builder_, "\"" + std::string(key) + "\" must hold positive integers, not " + value.dump());
    }
    return value.get<int64_t>();
  }

  std::string builder_;
  const json& options_;
};

// Appends layers to a description; a layer without explicit inputs reads the
// previous one, as in the JSON format.
class Builder {
 public:
  explicit Builder(const std::vector<int64_t>& input_shape) {
    description_.inputs.push_back({"data", core::Shape(input_shape)});
  }

  // Returns the name by value: a reference into layers would dangle at the next add.
  std::string add(const std::string& name, const std::string& type, json attributes = json::object(),
                         std::vector<std::string> inputs = {}) {
    if (inputs.empty()) inputs = {last()};
    description_.layers.push_back({name, type, std::move(inputs), std::move(attributes)});
    return description_.layers.back().name;
  }

  // The layer (or input) that the next layer reads by default.
  std::string last() const {
    return description_.layers.empty() ? description_.inputs.front().name : description_.layers.back().name;
  }

  NetDescription finish() {
    description_.output = description_.layers.back().name;
    return std::move(description_);
  }

 private:
  NetDescription description_;
};

NetDescription mlp(const json& options) {
  const Options o("mlp", options, {"input_shape", "hidden", "classes", "activation"});
  const auto input_shape = o.input_shape({1, 28, 28}, 0);
  const auto hidden = o.int_list("hidden", {256, 128}, true);
  const int64_t classes = o.positive_int("classes", 10);
  const std::string act = o.activation("relu");
  Builder b(input_shape);
  b.add("flatten", "Flatten");
  for (size_t i = 0; i < hidden.size(); ++i) {
    const std::string n = std::to_string(i + 1);
    b.add("fc" + n, "Dense", {{"units", hidden[i]}});
    b.add("act" + n, act);
  }
  b.add("fc" + std::to_string(hidden.size() + 1), "Dense", {{"units", classes}});
  return b.finish();
}

NetDescription lenet(const json& options) {
  const Options o("lenet", options, {"input_shape", "classes", "activation"});
  const auto input_shape = o.input_shape({1, 28, 28}, 3);
  const int64_t classes = o.positive_int("classes", 10);
  const std::string act = o.activation("relu");
  Builder b(input_shape);
  b.add("conv1", "Conv2D", {{"channels", 20}, {"kernel_size", 5}});
  b.add("act1", act);
  b.add("pool1", "MaxPool2D", {{"pool_size", 2}, {"strides", 2}});
  b.add("conv2", "Conv2D", {{"channels", 50}, {"kernel_size", 5}});
  b.add("act2", act);
  b.add("pool2", "MaxPool2D", {{"pool_size", 2}, {"strides", 2}});
  b.add("flatten", "Flatten");
  b.add("fc1", "Dense", {{"units", 500}});
  b.add("act3", act);
  b.add("fc2", "Dense", {{"units", classes}});
  return b.finish();
}

// conv (no bias) + BatchNorm, the unit ResNet is made of; returns the BatchNorm.
std::string conv_bn(Builder& b, const std::string& conv, const std::string& bn, int64_t channels, int64_t kernel,
                    int64_t stride, const std::string& input) {
  b.add(conv, "Conv2D",
        {{"channels", channels}, {"kernel_size", kernel}, {"strides", stride}, {"padding", kernel / 2},
         {"use_bias", false}},
        {input});
  return b.add(bn, "BatchNorm");
}

// d2l's Residual: relu(bn2(conv2(relu(bn1(conv1(x))))) + shortcut(x)), the
// shortcut a 1x1 conv + BatchNorm where the block changes width or stride.
std::string basic_block(Builder& b, const std::string& name, const std::string& input, int64_t channels,
                        int64_t stride, bool project) {
  conv_bn(b, name + "conv1", name + "bn1", channels, 3, stride, input);
  const std::string relu1 = b.add(name + "relu1", "ReLU");
  const std::string main = conv_bn(b, name + "conv2", name + "bn2", channels, 3, 1, relu1);
  const std::string shortcut =
      project ? conv_bn(b, name + "proj_conv", name + "proj_bn", channels, 1, stride, input) : input;
  b.add(name + "add", "Add", json::object(), {main, shortcut});
  return b.add(name + "relu2", "ReLU");
}

// A residual block: appends it to b reading input; returns its output.
using ResidualBlock = std::string (*)(Builder& b, const std::string& name, const std::string& input,
                                      int64_t channels, int64_t stride, bool project);

// The four stages of two residual blocks every ResNet-18 stem feeds, then
// global average pooling and Dense classes.
NetDescription resnet18_body(Builder& b, std::string x, int64_t classes, ResidualBlock block_of = basic_block) {
  const int64_t widths[] = {64, 128, 256, 512};
  for (int stage = 0; stage < 4; ++stage) {
    for (int block = 0; block < 2; ++block) {
      const bool downsample = stage > 0 && block == 0;
      const std::string name = "stage" + std::to_string(stage + 1) + ".block" + std::to_string(block + 1) + ".";
      x = block_of(b, name, x, widths[stage], downsample ? 2 : 1, downsample);
    }
  }
  b.add("pool", "GlobalAvgPool2D");
  b.add("fc", "Dense", {{"units", classes}});
  return b.finish();
}

NetDescription resnet18(const json& options) {
  const Options o("resnet18", options, {"input_shape", "classes"});
  const auto input_shape = o.input_shape({3, 32, 32}, 3);
  const int64_t classes = o.positive_int("classes", 10);
  Builder b(input_shape);
  conv_bn(b, "conv1", "bn1", 64, 3, 1, "data");
  return resnet18_body(b, b.add("relu1", "ReLU"), classes);
}

// torchvision's resnet18: the 7x7 stride-2 stem and 3x3 stride-2 max pool
// shrink a 224x224 image 4x before the stages, which 32x32 images cannot
// afford (the last stage would see 1x1), hence a model of its own.
NetDescription resnet18_imagenet(const json& options) {
  const Options o("resnet18_imagenet", options, {"input_shape", "classes"});
  const auto input_shape = o.input_shape({3, 224, 224}, 3);
  const int64_t classes = o.positive_int("classes", 1000);
  Builder b(input_shape);
  conv_bn(b, "conv1", "bn1", 64, 7, 2, "data");
  b.add("relu1", "ReLU");
  const std::string pool = b.add("pool1", "MaxPool2D", {{"pool_size", 3}, {"strides", 2}, {"padding", 1}});
  return resnet18_body(b, pool, classes);
}

// d2l's Residual exactly as its multi-GPU chapter builds ResNet-18:
// convolutions with a bias, and where the block changes width or stride a
// 1x1 convolution (with a bias, without BatchNorm) on the shortcut.
std::string d2l_residual(Builder& b, const std::string& name, const std::string& input, int64_t channels,
                         int64_t stride, bool project) {
  const auto conv = [&](const std::string& layer, int64_t kernel, int64_t s, const std::string& from) {
    return b.add(layer, "Conv2D",
                 {{"channels", channels}, {"kernel_size", kernel}, {"strides", s}, {"padding", kernel / 2}}, {from});
  };
  conv(name + "conv1", 3, stride, input);
  b.add(name + "bn1", "BatchNorm");
  const std::string relu1 = b.add(name + "relu1", "ReLU");
  conv(name + "conv2", 3, 1, relu1);
  const std::string main = b.add(name + "bn2", "BatchNorm");
  const std::string shortcut = project ? conv(name + "conv3", 1, stride, input) : input;
  b.add(name + "add", "Add", json::object(), {main, shortcut});
  return b.add(name + "relu2", "ReLU");
}

NetDescription resnet18_d2l(const json& options) {
  const Options o("resnet18_d2l", options, {"input_shape", "classes"});
  const auto input_shape = o.input_shape({3, 32, 32}, 3);
  const int64_t classes = o.positive_int("classes", 10);
  Builder b(input_shape);
  b.add("conv1", "Conv2D", {{"channels", 64}, {"kernel_size", 3}, {"strides", 1}, {"padding", 1}}, {"data"});
  b.add("bn1", "BatchNorm");
  return resnet18_body(b, b.add("relu1", "ReLU"), classes, d2l_residual);
}

// Configuration "A" of VGG (64, M, 128, M, 256, 256, M, 512, 512, M, 512,
// 512, M): 3x3 stride-1 convolutions, a 2x2 max pool at each M. With
// batch_norm each convolution feeds BatchNorm and carries no bias (as in
// the CIFAR recipes); without it, a bias (as in Gluon's model zoo).
void vgg11_features(Builder& b, bool batch_norm) {
  constexpr int64_t kPool = 0;
  const int64_t layout[] = {64, kPool, 128, kPool, 256, 256, kPool, 512, 512, kPool, 512, 512, kPool};
  int conv = 0, pool = 0;
  for (const int64_t channels : layout) {
    if (channels == kPool) {
      b.add("pool" + std::to_string(++pool), "MaxPool2D", {{"pool_size", 2}, {"strides", 2}});
      continue;
    }
    const std::string n = std::to_string(++conv);
    if (batch_norm) {
      conv_bn(b, "conv" + n, "bn" + n, channels, 3, 1, b.last());
    } else {
      b.add("conv" + n, "Conv2D", {{"channels", channels}, {"kernel_size", 3}, {"strides", 1}, {"padding", 1}});
    }
    b.add("relu" + n, "ReLU");
  }
}

// Five 2x2 pools halve the image five times.
std::vector<int64_t> vgg_input_shape(const Options& o, const char* builder) {
  const auto input_shape = o.input_shape({3, 32, 32}, 3);
  if (input_shape[1] < 32 || input_shape[2] < 32) {
    invalid(builder, "\"input_shape\" must be at least 32x32 for its five 2x2 pools, not " +
                         std::to_string(input_shape[1]) + "x" + std::to_string(input_shape[2]));
  }
  return input_shape;
}

// The two VGG-11s:
//  - Gluon's model-zoo vgg11 (mxnet.gluon.model_zoo.vision.vgg11): the
//    features without BatchNorm, then Dense 4096 + ReLU + Dropout 0.5 twice
//    and Dense classes. On 32x32 images the features leave 512 values:
//    28,144,010 learnable parameters for 10 classes.
//  - with BatchNorm for 32x32 images, as CIFAR recipes build it
//    (cifar_recipe): one Dense layer on those 512 values in place of
//    ImageNet's two 4096-wide layers, which would hold most of the
//    parameters and overfit 32x32 data.
NetDescription vgg11(const char* builder, const json& options, bool cifar_recipe) {
  const Options o(builder, options, {"input_shape", "classes"});
  const auto input_shape = vgg_input_shape(o, builder);
  const int64_t classes = o.positive_int("classes", 10);
  Builder b(input_shape);
  vgg11_features(b, cifar_recipe);
  b.add("flatten", "Flatten");
  for (int i = 1; !cifar_recipe && i <= 2; ++i) {
    const std::string n = std::to_string(i);
    b.add("fc" + n, "Dense", {{"units", 4096}});
    b.add("fc" + n + "_relu", "ReLU");
    b.add("fc" + n + "_dropout", "Dropout", {{"rate", 0.5}});
  }
  b.add("fc", "Dense", {{"units", classes}});
  return b.finish();
}

}  // namespace

std::vector<std::string> model_builder_names() {
  return {"mlp", "lenet", "resnet18", "resnet18_d2l", "resnet18_imagenet", "vgg11", "vgg11_bn_cifar"};
}

NetDescription build_model_description(const std::string& builder, const json& options) {
  if (builder == "mlp") return mlp(options);
  if (builder == "lenet") return lenet(options);
  if (builder == "resnet18") return resnet18(options);
  if (builder == "resnet18_d2l") return resnet18_d2l(options);
  if (builder == "resnet18_imagenet") return resnet18_imagenet(options);
  if (builder == "vgg11") return vgg11("vgg11", options, false);
  if (builder == "vgg11_bn_cifar") return vgg11("vgg11_bn_cifar", options, true);
  std::string known;
  for (const std::string& name : model_builder_names()) known += (known.empty() ? "" : ", ") + name;
  throw Error(ErrorCode::kInvalidArgument, "unknown model \"" + builder + "\" (known: " + known + ")");
}

NetDescription build_model_description_from_text(const std::string& builder, const std::string& options_json) {
  if (options_json.empty()) return build_model_description(builder, json());
  json options;
  try {
    options = json::parse(options_json);
  } catch (const json::exception& e) {  // parse_error, and out_of_range for 1e999
    invalid(builder, std::string("options are not valid JSON: ") + e.what());
  }
  return build_model_description(builder, options);
}

}  // namespace dt::nn
