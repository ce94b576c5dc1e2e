// The JSON description: defaults, round trips through Net for every model
// builder, and the errors of malformed descriptions and builder options.
#include <gtest/gtest.h>

#include "nn/model_builders.h"
#include "nn/net.h"
#include "nn/net_description.h"
#include "net_test_util.h"

namespace dt::nn {
namespace {

using core::ErrorCode;
using testing::error_of;

TEST(NetDescription, SequentialDefaultsAreFilledIn) {
  const auto d = parse_net_description(R"({
    "format": "disttrain.net", "version": 1,
    "inputs": [{"name": "data", "shape": [1, 28, 28]}],
    "layers": [{"name": "flat", "type": "Flatten"},
               {"name": "fc", "type": "Dense", "units": 10}]
  })");
  ASSERT_EQ(d.layers.size(), 2u);
  EXPECT_EQ(d.inputs[0].shape, (core::Shape{1, 28, 28}));
  EXPECT_EQ(d.layers[0].inputs, std::vector<std::string>{"data"});
  EXPECT_EQ(d.layers[1].inputs, std::vector<std::string>{"flat"});
  EXPECT_EQ(d.layers[1].attributes, (nlohmann::json{{"units", 10}}));
  EXPECT_EQ(d.output, "fc");
  EXPECT_EQ(d.loss, LossSpec{});
  // Written back with everything explicit, and read back the same.
  EXPECT_EQ(parse_net_description(net_description_to_text(d)), d);
}

TEST(NetDescription, EveryBuilderRoundTripsThroughNet) {
  const std::pair<const char*, const char*> models[] = {
      {"mlp", ""},
      {"mlp", R"({"input_shape": [20], "hidden": [], "classes": 3, "activation": "sigmoid"})"},
      {"lenet", R"({"input_shape": [3, 32, 32], "classes": 100, "activation": "tanh"})"},
      {"lenet", ""},
      {"resnet18", ""},
      {"resnet18_imagenet", R"({"input_shape": [3, 64, 64], "classes": 10})"},
      {"resnet18_d2l", R"({"input_shape": [3, 8, 8], "classes": 3})"},
      {"vgg11", R"({"classes": 100})"},
      {"vgg11_bn_cifar", R"({"classes": 100})"},
  };
  for (const auto& [builder, options] : models) {
    SCOPED_TRACE(std::string(builder) + " " + options);
    auto ctx = core::make_cpu_context();
    Net net(build_model_description_from_text(builder, options), ctx);
    const std::string text = net.to_json();
    const NetDescription reread = parse_net_description(text);
    EXPECT_EQ(reread, net.description());
    // A net built from the text writes the same text and has the same parameters.
    auto rebuilt = net_from_json(text, ctx);
    EXPECT_EQ(rebuilt->to_json(), text);
    ASSERT_EQ(rebuilt->parameters().size(), net.parameters().size());
    for (size_t i = 0; i < net.parameters().size(); ++i) {
      EXPECT_EQ(rebuilt->parameters()[i].name, net.parameters()[i].name);
      EXPECT_EQ(rebuilt->parameters()[i].value.shape(), net.parameters()[i].value.shape());
    }
  }
}

TEST(NetDescription, TextIsReadable) {
  Net net(build_model_description_from_text("lenet", ""), core::make_cpu_context());
  const std::string text = net.to_json();
  // Format first, and each layer's name, type and inputs before its attributes.
  EXPECT_EQ(text.rfind("{\n  \"format\": \"disttrain.net\",\n  \"version\": 1,", 0), 0u) << text;
  EXPECT_NE(text.find("\"name\": \"conv1\",\n      \"type\": \"Conv2D\",\n      \"inputs\": [\n        \"data\""),
            std::string::npos)
      << text;
}

TEST(NetDescription, MalformedDescriptionsSayWhatIsWrong) {
  struct Case {
    const char* text;
    ErrorCode code;
    const char* expected;
  };
  const Case cases[] = {
      {R"({"format": "disttrain.net", "version": 1,)", ErrorCode::kInvalidArgument, "line 1, column"},
      {R"([1, 2])", ErrorCode::kInvalidArgument, "must be a JSON object"},
      {R"({"version": 1, "inputs": [], "layers": []})", ErrorCode::kInvalidArgument, "has no \"format\""},
      {R"({"format": "other", "version": 1})", ErrorCode::kInvalidArgument, "\"format\" must be \"disttrain.net\""},
      {R"({"format": "disttrain.net", "version": 2, "inputs": [], "layers": []})", ErrorCode::kNotSupported,
       "version 2 is not supported"},
      {R"({"format": "disttrain.net", "version": 1, "layers": []})", ErrorCode::kInvalidArgument,
       "has no \"inputs\""},
      {R"({"format": "disttrain.net", "version": 1, "inputs": [{"name": "x", "shape": [0]}],
           "layers": [{"name": "fc", "type": "Dense"}]})",
       ErrorCode::kInvalidArgument, "inputs[0].shape must hold positive integers"},
      {R"({"format": "disttrain.net", "version": 1, "inputs": [{"name": "x", "shape": [2]}],
           "layers": [{"type": "Dense"}]})",
       ErrorCode::kInvalidArgument, "layers[0] has no \"name\""},
      {R"({"format": "disttrain.net", "version": 1, "inputs": [{"name": "x", "shape": [2]}],
           "layers": [{"name": "fc", "type": 3}]})",
       ErrorCode::kInvalidArgument, "layers[0] (\"fc\").type must be a string"},
      {R"({"format": "disttrain.net", "version": 1, "inputs": [{"name": "x", "shape": [2]}, {"name": "y", "shape": [2]}],
           "layers": [{"name": "fc", "type": "Dense"}]})",
       ErrorCode::kInvalidArgument, "must list its \"inputs\""},
      {R"({"format": "disttrain.net", "version": 1, "inputs": [{"name": "x", "shape": [2]}],
           "layers": [{"name": "fc", "type": "Dense"}], "loss": {"reduction": "max"}})",
       ErrorCode::kInvalidArgument, "loss.reduction must be \"mean\" or \"sum\""},
      {R"({"format": "disttrain.net", "version": 1, "inputs": [{"name": "x", "shape": [2]}],
           "layers": [{"name": "fc", "type": "Dense"}], "outputs": "fc"})",
       ErrorCode::kInvalidArgument, "unknown key \"outputs\""},
  };
  for (const Case& c : cases) {
    const auto e = error_of([&] { parse_net_description(c.text); });
    EXPECT_EQ(e.code, c.code) << e.message;
    EXPECT_NE(e.message.find(c.expected), std::string::npos) << "expected \"" << c.expected << "\" in: " << e.message;
  }
  // Attributes are the layers' business: a bad one surfaces when the net is built.
  const auto e = error_of([] {
    net_from_json(R"({"format": "disttrain.net", "version": 1, "inputs": [{"name": "x", "shape": [2]}],
                      "layers": [{"name": "fc", "type": "Dense", "units": 3, "unitz": 4}]})",
                  core::make_cpu_context());
  });
  EXPECT_EQ(e.code, ErrorCode::kInvalidArgument);
  EXPECT_NE(e.message.find("unitz"), std::string::npos) << e.message;
}

TEST(NetModelBuilder, BadBuilderOrOptionsAreClearErrors) {
  struct Case {
    const char* builder;
    const char* options;
    const char* expected;
  };
  const Case cases[] = {
      {"vgg16", "", "unknown model \"vgg16\" (known: mlp, lenet, resnet18, resnet18_d2l, resnet18_imagenet, vgg11, vgg11_bn_cifar)"},
      {"lenet", "{", "options are not valid JSON"},
      {"lenet", "[1]", "options must be a JSON object"},
      {"lenet", R"({"clases": 10})", "unknown option \"clases\""},
      {"lenet", R"({"classes": 0})", "\"classes\" must hold positive integers"},
      {"lenet", R"({"input_shape": [28, 28]})", "\"input_shape\" must have 3 dims"},
      {"mlp", R"({"hidden": [64, -1]})", "\"hidden\" must hold positive integers"},
      {"mlp", R"({"activation": "gelu"})", "\"activation\" must be"},
      {"resnet18", R"({"hidden": [3]})", "unknown option \"hidden\""},
      {"vgg11", R"({"input_shape": [3, 28, 28]})", "\"input_shape\" must be at least 32x32"},
      {"vgg11_bn_cifar", R"({"input_shape": [3, 28, 28]})", "\"input_shape\" must be at least 32x32"},
  };
  for (const Case& c : cases) {
    const auto e = error_of([&] { build_model_description_from_text(c.builder, c.options); });
    EXPECT_EQ(e.code, ErrorCode::kInvalidArgument) << e.message;
    EXPECT_NE(e.message.find(c.expected), std::string::npos) << "expected \"" << c.expected << "\" in: " << e.message;
  }
}

}  // namespace
}  // namespace dt::nn
