// create_layer for every type from JSON attributes, the attributes()
// round trip Net's to_json relies on, and the errors for bad attributes.

#include <gtest/gtest.h>

#include "layer_test_util.h"
#include "nn/layer.h"

namespace dt::nn::layers {
namespace {

using core::ErrorCode;
using nlohmann::json;
using testing::code_of;

struct Case {
  const char* type;
  json attributes;
};

std::vector<Case> all_types() {
  return {
      {"Dense", {{"units", 10}}},
      {"Dense", {{"units", 4}, {"use_bias", false}, {"flatten", false}, {"in_units", 3},
                 {"weight_initializer", "kaiming_normal"}, {"bias_initializer", {{"kind", "constant"}, {"value", 0.5}}}}},
      {"Conv2D", {{"channels", 8}, {"kernel_size", 3}}},
      {"Conv2D", {{"channels", 8}, {"kernel", {3, 5}}, {"strides", {2, 1}}, {"padding", 1}, {"dilation", 2},
                  {"groups", 2}, {"use_bias", false}, {"in_channels", 4}}},
      {"MaxPool2D", json::object()},
      {"MaxPool2D", {{"pool_size", 3}, {"strides", 2}, {"padding", 1}}},
      {"AvgPool2D", {{"pool_size", {2, 3}}, {"count_include_pad", false}}},
      {"GlobalAvgPool2D", json::object()},
      {"BatchNorm", json::object()},
      {"BatchNorm", {{"momentum", 0.8}, {"epsilon", 1e-3}, {"in_channels", 16}}},
      {"ReLU", json::object()},
      {"Sigmoid", json::object()},
      {"Tanh", json::object()},
      {"Activation", {{"act_type", "sigmoid"}}},
      {"Dropout", {{"rate", 0.25}}},
      {"Dropout", json::object()},
      {"Flatten", json::object()},
      {"Add", json::object()},
  };
}

TEST(LayerFactoryTest, EveryTypeRoundTripsThroughAttributes) {
  for (const Case& c : all_types()) {
    SCOPED_TRACE(std::string(c.type) + " " + c.attributes.dump());
    const auto layer = create_layer(c.type, "x", c.attributes);
    EXPECT_STREQ(layer->type(), c.type);
    EXPECT_EQ(layer->name(), "x");
    const json attributes = layer->attributes();
    ASSERT_TRUE(attributes.is_object());
    for (const char* reserved : {"name", "type", "inputs"}) EXPECT_FALSE(attributes.contains(reserved));
    const auto again = create_layer(layer->type(), "x", attributes);
    EXPECT_EQ(again->attributes(), attributes);
  }
}

TEST(LayerFactoryTest, DefaultsFollowGluon) {
  const json pool = create_layer("MaxPool2D", "p", {{"pool_size", 3}})->attributes();
  EXPECT_EQ(pool["strides"], json({3, 3}));  // strides default to pool_size
  EXPECT_EQ(pool["padding"], json({0, 0}));
  EXPECT_EQ(create_layer("AvgPool2D", "p", json::object())->attributes()["count_include_pad"], true);
  const json bn = create_layer("BatchNorm", "b", json::object())->attributes();
  EXPECT_DOUBLE_EQ(bn["momentum"].get<double>(), 0.9);
  EXPECT_DOUBLE_EQ(bn["epsilon"].get<double>(), 1e-5);
  EXPECT_DOUBLE_EQ(create_layer("Dropout", "d", json::object())->attributes()["rate"].get<double>(), 0.5);
  const json conv = create_layer("Conv2D", "c", {{"channels", 2}, {"kernel", 3}})->attributes();
  EXPECT_EQ(conv["kernel_size"], json({3, 3}));
  EXPECT_EQ(conv["weight_initializer"]["kind"], "xavier_uniform");
  EXPECT_EQ(create_layer("Dense", "d", {{"units", 2}})->attributes()["weight_initializer"]["kind"],
            "xavier_uniform");
  // A null attributes value reads as no attributes.
  EXPECT_STREQ(create_layer("ReLU", "r", json())->type(), "ReLU");
}

TEST(LayerFactoryTest, InitializerAttributesReachParamSpecs) {
  const auto layer = create_layer("Dense", "fc",
                                  {{"units", 3},
                                   {"weight_initializer", {{"kind", "normal"}, {"scale", 0.02}}},
                                   {"bias_initializer", "ones"}});
  const auto specs = layer->param_specs({core::Shape({2, 5})});
  EXPECT_EQ(specs[0].init.kind, Initializer::Kind::kNormal);
  EXPECT_DOUBLE_EQ(specs[0].init.scale, 0.02);
  EXPECT_EQ(specs[1].init.kind, Initializer::Kind::kOnes);
}

TEST(LayerFactoryTest, BadAttributesGiveClearErrors) {
  struct Bad {
    const char* type;
    json attributes;
    const char* must_mention;
  };
  const Bad cases[] = {
      {"Dense", json::object(), "'units' is required"},
      {"Dense", {{"units", "ten"}}, "'units' must be an integer"},
      {"Dense", {{"units", 0}}, "'units' must be >= 1"},
      {"Dense", {{"units", 3}, {"use_bias", 1}}, "'use_bias' must be true or false"},
      {"Dense", {{"units", 3}, {"unit", 4}}, "unknown attribute(s) 'unit'"},
      {"Dense", {{"units", 3}, {"weight_initializer", "glorot"}}, "unknown initializer 'glorot'"},
      {"Dense", {{"units", 3}, {"weight_initializer", {{"kind", "normal"}, {"sigma", 1}}}}, "unknown field 'sigma'"},
      {"Conv2D", {{"channels", 4}}, "'kernel_size' is required"},
      {"Conv2D", {{"channels", 4}, {"kernel_size", {3, 3, 3}}}, "'kernel_size' must be an integer or a list of two"},
      {"Conv2D", {{"channels", 4}, {"kernel_size", 3}, {"kernel", 3}}, "give only one"},
      {"Conv2D", {{"channels", 6}, {"kernel_size", 3}, {"groups", 4}}, "multiple of groups"},
      {"Conv2D", {{"channels", 6}, {"kernel_size", 3}, {"stride", 2}}, "unknown attribute(s) 'stride'"},
      {"Conv2D", {{"channels", 6}, {"kernel_size", 3}, {"padding", -1}}, "'padding' must be"},
      {"MaxPool2D", {{"pool_size", 2}, {"padding", 2}}, "at most half of pool_size"},
      {"AvgPool2D", {{"count_include_pad", "yes"}}, "'count_include_pad' must be true or false"},
      {"BatchNorm", {{"momentum", 1.5}}, "momentum must be in [0, 1]"},
      {"BatchNorm", {{"epsilon", 0}}, "epsilon must be positive"},
      {"Dropout", {{"rate", 1.0}}, "rate must be in [0, 1)"},
      {"Activation", json::object(), "'act_type' is required"},
      {"Activation", {{"act_type", "gelu"}}, "must be relu, sigmoid or tanh"},
      {"ReLU", {{"act_type", "relu"}}, "unknown attribute(s) 'act_type'"},
      {"Flatten", json::array(), "attributes must be a JSON object"},
  };
  for (const Bad& bad : cases) {
    SCOPED_TRACE(std::string(bad.type) + " " + bad.attributes.dump());
    std::string message;
    EXPECT_EQ(code_of([&] { create_layer(bad.type, "layer7", bad.attributes); }, &message),
              ErrorCode::kInvalidArgument);
    EXPECT_NE(message.find(bad.must_mention), std::string::npos) << message;
    EXPECT_NE(message.find("'layer7'"), std::string::npos) << message;
  }
}

TEST(LayerFactoryTest, UnknownTypeListsTheKnownOnes) {
  std::string message;
  EXPECT_EQ(code_of([&] { create_layer("LSTM", "rnn", json::object()); }, &message), ErrorCode::kInvalidArgument);
  EXPECT_NE(message.find("unknown type 'LSTM'"), std::string::npos) << message;
  EXPECT_NE(message.find("Conv2D"), std::string::npos) << message;
  EXPECT_NE(message.find("'rnn'"), std::string::npos) << message;
}

}  // namespace
}  // namespace dt::nn::layers
