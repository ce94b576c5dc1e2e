// The graph: construction order and errors, parameters of the model
// builders, forward shapes and batch sizes. Gradients, grad_req, parameter
// files and clones: net_gradient_and_params_test.cc.
#include <gtest/gtest.h>

#include "net_graph_test_util.h"

namespace dt::nn {
namespace {

using namespace net_graph_test;

// A net on 4 features whose layers are listed out of order.
const char* kUnordered = R"({
  "format": "disttrain.net", "version": 1,
  "inputs": [{"name": "x", "shape": [4]}],
  "layers": [
    {"name": "out", "type": "Dense", "inputs": ["sum"], "units": 3},
    {"name": "sum", "type": "Add", "inputs": ["b", "a"]},
    {"name": "a", "type": "Dense", "inputs": ["x"], "units": 5},
    {"name": "b", "type": "Tanh", "inputs": ["a"]}
  ],
  "output": "out"
})";

TEST(NetGraph, TopologicalOrderFollowsDependencies) {
  auto net = net_of(kUnordered);
  EXPECT_EQ(net->topological_order(), (std::vector<std::string>{"a", "b", "sum", "out"}));
  // Parameters stay in the description's layer order.
  std::vector<std::string> names;
  for (const auto& p : net->parameters()) names.push_back(p.name);
  EXPECT_EQ(names, (std::vector<std::string>{"out.weight", "out.bias", "a.weight", "a.bias"}));
}

TEST(NetGraph, SequentialDescriptionKeepsItsOrder) {
  auto net = model("lenet");
  EXPECT_EQ(net->topological_order(),
            (std::vector<std::string>{"conv1", "act1", "pool1", "conv2", "act2", "pool2", "flatten", "fc1", "act3",
                                      "fc2"}));
}

std::string with_layers(const std::string& layers, const std::string& output) {
  return R"({"format": "disttrain.net", "version": 1, "inputs": [{"name": "x", "shape": [4]}], "layers": )" +
         layers + R"(, "output": ")" + output + "\"}";
}

TEST(NetGraph, CycleIsRejectedNamingTheLayers) {
  const auto e = error_of([] {
    net_of(with_layers(R"([{"name": "a", "type": "Add", "inputs": ["x", "c"]},
                          {"name": "b", "type": "Tanh", "inputs": ["a"]},
                          {"name": "c", "type": "Tanh", "inputs": ["b"]},
                          {"name": "out", "type": "Dense", "inputs": ["c"], "units": 2}])",
                       "out"));
  });
  EXPECT_EQ(e.code, ErrorCode::kInvalidArgument);
  EXPECT_NE(e.message.find("cycle"), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("\"a\""), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("\"c\""), std::string::npos) << e.message;
}

TEST(NetGraph, SelfLoopIsACycle) {
  const auto e = error_of([] {
    net_of(with_layers(R"([{"name": "a", "type": "Add", "inputs": ["x", "a"]},
                          {"name": "out", "type": "Dense", "units": 2}])",
                       "out"));
  });
  EXPECT_EQ(e.code, ErrorCode::kInvalidArgument);
  EXPECT_NE(e.message.find("cycle"), std::string::npos) << e.message;
}

TEST(NetGraph, UnknownInputIsNamed) {
  const auto e = error_of([] {
    net_of(with_layers(R"([{"name": "fc", "type": "Dense", "inputs": ["nope"], "units": 2}])", "fc"));
  });
  EXPECT_EQ(e.code, ErrorCode::kInvalidArgument);
  EXPECT_NE(e.message.find("\"nope\""), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("\"fc\""), std::string::npos) << e.message;
}

TEST(NetGraph, DuplicateNamesAreRejected) {
  for (const char* layers : {R"([{"name": "fc", "type": "Dense", "units": 2}, {"name": "fc", "type": "Dense", "units": 2}])",
                             R"([{"name": "x", "type": "Dense", "units": 2}])"}) {
    const auto e = error_of([&] { net_of(with_layers(layers, "fc")); });
    EXPECT_EQ(e.code, ErrorCode::kInvalidArgument);
    EXPECT_NE(e.message.find("duplicate name"), std::string::npos) << e.message;
  }
}

TEST(NetGraph, OtherGraphMistakesAreNamed) {
  struct Case {
    std::string layers, output, expected;
  };
  const Case cases[] = {
      {R"([{"name": "fc", "type": "Dense", "units": 2}])", "x", "the output \"x\" is not a layer"},
      {R"([{"name": "fc", "type": "Dense", "units": 2}, {"name": "side", "type": "Tanh", "inputs": ["x"]}])", "fc",
       "layer \"side\" does not lead to the output"},
      {R"([{"name": "fc", "type": "Dense", "units": 2}, {"name": "sum", "type": "Add"}])", "sum",
       "takes 2 input(s), got 1"},
      {R"([{"name": "t", "type": "Tanh"}, {"name": "fc", "type": "Bogus"}])", "fc", "unknown type 'Bogus'"},
  };
  for (const Case& c : cases) {
    const auto e = error_of([&] { net_of(with_layers(c.layers, c.output)); });
    EXPECT_EQ(e.code, ErrorCode::kInvalidArgument) << e.message;
    EXPECT_NE(e.message.find(c.expected), std::string::npos) << e.message;
  }
  const auto not_logits = error_of([] {
    net_of(R"({"format": "disttrain.net", "version": 1, "inputs": [{"name": "x", "shape": [2, 3]}],
               "layers": [{"name": "t", "type": "Tanh"}]})");
  });
  EXPECT_NE(not_logits.message.find("the loss needs (batch, classes)"), std::string::npos) << not_logits.message;
  const auto unread = error_of([] {
    net_of(R"({"format": "disttrain.net", "version": 1,
               "inputs": [{"name": "x", "shape": [4]}, {"name": "y", "shape": [4]}],
               "layers": [{"name": "fc", "type": "Dense", "inputs": ["x"], "units": 2}]})");
  });
  EXPECT_NE(unread.message.find("no layer reads the graph input \"y\""), std::string::npos) << unread.message;
}

TEST(NetGraph, InputTooSmallForTheLayersIsAShapeErrorNamingTheLayer) {
  const auto e = error_of([] { model("lenet", R"({"input_shape": [1, 8, 8]})"); });
  EXPECT_EQ(e.code, ErrorCode::kShapeMismatch) << e.message;
  EXPECT_NE(e.message.find("conv2"), std::string::npos) << e.message;
}

size_t learnable_count(const Net& net) {
  size_t count = 0;
  for (const auto& p : net.parameters()) {
    if (!p.auxiliary) count += p.value.size();
  }
  return count;
}

TEST(NetGraph, LeNetParameters) {
  auto net = model("lenet");
  const std::vector<std::pair<std::string, Shape>> expected = {
      {"conv1.weight", Shape{20, 1, 5, 5}}, {"conv1.bias", Shape{20}},   {"conv2.weight", Shape{50, 20, 5, 5}},
      {"conv2.bias", Shape{50}},            {"fc1.weight", Shape{500, 800}}, {"fc1.bias", Shape{500}},
      {"fc2.weight", Shape{10, 500}},       {"fc2.bias", Shape{10}}};
  ASSERT_EQ(net->parameters().size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    const Parameter& p = net->parameters()[i];
    EXPECT_EQ(p.name, expected[i].first);
    EXPECT_EQ(p.value.shape(), expected[i].second) << p.name;
    EXPECT_EQ(p.grad.shape(), expected[i].second) << p.name;
    EXPECT_FALSE(p.auxiliary);
    EXPECT_EQ(p.grad_req, GradReq::kWrite);
  }
  // 520 + 25,050 + 400,500 + 5,010.
  EXPECT_EQ(learnable_count(*net), 431080u);
}

TEST(NetGraph, ResNet18Parameters) {
  auto net = model("resnet18");
  // The well-known count of the CIFAR ResNet-18 (bias-free convolutions).
  EXPECT_EQ(learnable_count(*net), 11173962u);
  size_t auxiliary = 0, convs = 0, bns = 0;
  for (const auto& p : net->parameters()) {
    if (p.auxiliary) {
      ++auxiliary;
      EXPECT_FALSE(p.grad.defined()) << p.name;
      EXPECT_EQ(p.grad_req, GradReq::kNull) << p.name;
    }
    if (p.name.size() > 7 && p.name.compare(p.name.size() - 7, 7, ".weight") == 0 && p.value.shape().ndim() == 4) {
      ++convs;
    }
    if (p.name.size() > 6 && p.name.compare(p.name.size() - 6, 6, ".gamma") == 0) ++bns;
  }
  EXPECT_EQ(convs, 20u);  // stem + 16 in the blocks + 3 projections
  EXPECT_EQ(bns, 20u);
  EXPECT_EQ(auxiliary, 40u);  // running mean and variance of each BatchNorm
  const Parameter& proj = net->parameters()[net->param_index("stage2.block1.proj_conv.weight")];
  EXPECT_EQ(proj.value.shape(), (Shape{128, 64, 1, 1}));
  EXPECT_EQ(net->parameters()[net->param_index("fc.weight")].value.shape(), (Shape{10, 512}));
}

TEST(NetGraph, ResNet18ImageNetParametersShapeAndOneTrainingStep) {
  auto net = model("resnet18_imagenet");
  // torchvision's resnet18 (1000 classes): sum(p.numel() for p in parameters()).
  EXPECT_EQ(learnable_count(*net), 11689512u);
  EXPECT_EQ(net->parameters()[net->param_index("conv1.weight")].value.shape(), (Shape{64, 3, 7, 7}));
  EXPECT_EQ(net->parameters()[net->param_index("fc.weight")].value.shape(), (Shape{1000, 512}));
  // 224 -> 112 (stem) -> 56 (pool) -> 56, 28, 14, 7 (stages) -> 1.
  net->initialize(2);
  net->forward({random_array(net->context(), Shape{1, 3, 224, 224}, 9)}, false);
  EXPECT_EQ(net->output(0).shape(), (Shape{1, 1000}));

  // 64x64 keeps the step fast; the stem and pool still quarter it before the stages.
  auto small = model("resnet18_imagenet", R"({"input_shape": [3, 64, 64], "classes": 10})");
  EXPECT_EQ(learnable_count(*small), 11689512u - 990u * 513u);
  small->initialize(3);
  const auto x = random_array(small->context(), Shape{4, 3, 64, 64}, 8);
  const auto labels = labels_array(small->context(), {1, 4, 6, 9});
  small->forward({x}, true);
  EXPECT_EQ(small->output(0).shape(), (Shape{4, 10}));
  const double before = small->backward(labels);
  ASSERT_TRUE(std::isfinite(before));
  for (Parameter& p : small->parameters()) {
    if (!p.auxiliary) ops::axpy(p.value, -0.01, p.grad);
  }
  small->forward({x}, true);
  const double after = small->backward(labels);
  EXPECT_LT(after, before) << "one SGD step on a batch lowers that batch's loss";
}

TEST(NetGraph, ResNet18D2lIsD2lsResidualWithBiasesAndA1x1ConvShortcut) {
  auto net = model("resnet18_d2l");
  // 1,920 stem + 148,224 + 525,952 + 2,100,480 + 8,395,264 in the stages +
  // 5,130 fc, counted by hand from d2l's Residual.
  EXPECT_EQ(learnable_count(*net), 11176970u);
  size_t convs = 0, biased_convs = 0, bns = 0;
  for (const auto& p : net->parameters()) {
    if (p.value.shape().ndim() == 4 && !p.auxiliary) ++convs;
    if (p.name.size() > 6 && p.name.compare(p.name.size() - 6, 6, ".gamma") == 0) ++bns;
  }
  for (const auto& p : net->parameters()) {
    if (p.name.size() > 5 && p.name.compare(p.name.size() - 5, 5, ".bias") == 0 && p.name.find("conv") != std::string::npos) {
      ++biased_convs;
    }
  }
  EXPECT_EQ(convs, 20u);         // stem + 16 in the blocks + 3 shortcuts
  EXPECT_EQ(biased_convs, 20u);  // every one with a bias, as nn.Conv2d's default
  EXPECT_EQ(bns, 17u);           // stem + 16: the 1x1 shortcut has none
  EXPECT_EQ(net->parameters()[net->param_index("stage2.block1.conv3.weight")].value.shape(), (Shape{128, 64, 1, 1}));
  net->initialize(4);
  net->forward({random_array(net->context(), Shape{2, 3, 32, 32}, 5)}, false);
  EXPECT_EQ(net->output(0).shape(), (Shape{2, 10}));
}

TEST(NetGraph, Vgg11IsGluonsModelZooLayout) {
  auto net = model("vgg11");
  // 9,220,480 convs with biases + 2,101,248 + 16,781,312 + 40,970 Dense.
  EXPECT_EQ(learnable_count(*net), 28144010u);
  size_t bns = 0, dropouts = 0;
  for (const auto& p : net->parameters()) {
    if (p.name.size() > 6 && p.name.compare(p.name.size() - 6, 6, ".gamma") == 0) ++bns;
  }
  for (const auto& layer : net->description().layers) dropouts += layer.type == "Dropout" ? 1 : 0;
  EXPECT_EQ(bns, 0u);
  EXPECT_EQ(dropouts, 2u);
  EXPECT_EQ(net->parameters()[net->param_index("conv1.bias")].value.shape(), (Shape{64}));
  EXPECT_EQ(net->parameters()[net->param_index("fc1.weight")].value.shape(), (Shape{4096, 512}));
  EXPECT_EQ(net->parameters()[net->param_index("fc2.weight")].value.shape(), (Shape{4096, 4096}));
  EXPECT_EQ(net->parameters()[net->param_index("fc.weight")].value.shape(), (Shape{10, 4096}));
  net->initialize(2);
  net->forward({random_array(net->context(), Shape{1, 3, 32, 32}, 3)}, false);
  EXPECT_EQ(net->output(0).shape(), (Shape{1, 10}));
}

TEST(NetGraph, Vgg11BnCifarParametersShapeAndOneTrainingStep) {
  auto net = model("vgg11_bn_cifar");
  // 9,217,728 conv weights (bias-free) + 5,504 BatchNorm gamma/beta + 5,130 fc.
  EXPECT_EQ(learnable_count(*net), 9228362u);
  size_t convs = 0, bns = 0;
  for (const auto& p : net->parameters()) {
    if (!p.auxiliary && p.value.shape().ndim() == 4) ++convs;
    if (p.name.size() > 6 && p.name.compare(p.name.size() - 6, 6, ".gamma") == 0) ++bns;
  }
  EXPECT_EQ(convs, 8u);
  EXPECT_EQ(bns, 8u);
  EXPECT_EQ(net->parameters()[net->param_index("conv5.weight")].value.shape(), (Shape{512, 256, 3, 3}));
  EXPECT_EQ(net->parameters()[net->param_index("fc.weight")].value.shape(), (Shape{10, 512}));

  net->initialize(11);
  const auto x = random_array(net->context(), Shape{4, 3, 32, 32}, 6);
  const auto labels = labels_array(net->context(), {0, 3, 7, 9});
  net->forward({x}, true);
  EXPECT_EQ(net->output(0).shape(), (Shape{4, 10}));
  const double before = net->backward(labels);
  ASSERT_TRUE(std::isfinite(before));
  for (Parameter& p : net->parameters()) {
    if (!p.auxiliary) ops::axpy(p.value, -0.01, p.grad);
  }
  net->forward({x}, true);
  const double after = net->backward(labels);
  EXPECT_LT(after, before) << "one SGD step on a batch lowers that batch's loss";

  auto small = model("vgg11_bn_cifar", R"({"classes": 100})");
  small->initialize(1);
  small->forward({random_array(small->context(), Shape{1, 3, 32, 32}, 7)}, false);
  EXPECT_EQ(small->output(0).shape(), (Shape{1, 100}));
  EXPECT_EQ(error_of([] { model("vgg11_bn_cifar", R"({"input_shape": [3, 16, 16]})"); }).code,
            ErrorCode::kInvalidArgument);
}

TEST(NetGraph, ForwardShapesAtSeveralBatchSizes) {
  auto lenet = model("lenet");
  auto mlp = model("mlp", R"({"hidden": [32], "classes": 7})");
  lenet->initialize(1);
  mlp->initialize(1);
  for (int64_t batch : {1, 7, 64}) {
    const auto x = random_array(lenet->context(), Shape{batch, 1, 28, 28}, 3);
    lenet->forward({x}, false);
    EXPECT_EQ(lenet->output(0).shape(), (Shape{batch, 10}));
    mlp->forward({x}, true);
    EXPECT_EQ(mlp->output(0).shape(), (Shape{batch, 7}));
  }
  // ResNet-18 on small images keeps the test fast; 32x32 runs once below.
  auto resnet = model("resnet18", R"({"input_shape": [3, 8, 8], "classes": 5})");
  resnet->initialize(1);
  for (int64_t batch : {1, 7, 64}) {
    resnet->forward({random_array(resnet->context(), Shape{batch, 3, 8, 8}, 4)}, true);
    EXPECT_EQ(resnet->output(0).shape(), (Shape{batch, 5}));
  }
  auto cifar = model("resnet18");
  cifar->initialize(1);
  cifar->forward({random_array(cifar->context(), Shape{2, 3, 32, 32}, 5)}, false);
  EXPECT_EQ(cifar->output(0).shape(), (Shape{2, 10}));
}

TEST(NetGraph, BatchSizeChangesBetweenCallsReuseBuffers) {
  auto net = model("lenet");
  net->initialize(7);
  const auto x7 = random_array(net->context(), Shape{7, 1, 28, 28}, 1);
  const auto x3 = x7.slice(0, 3);
  net->forward({x7}, false);
  const auto out7 = to_vector(net->output(0));
  const void* buffer7 = net->output(0).data();
  net->forward({x3}, false);
  const auto out3 = to_vector(net->output(0));
  ASSERT_EQ(out3.size(), 30u);
  // Rows do not depend on the batch they are in.
  for (size_t i = 0; i < out3.size(); ++i) EXPECT_NEAR(out3[i], out7[i], 1e-4f);
  net->forward({x7}, false);
  EXPECT_EQ(net->output(0).data(), buffer7) << "a batch size seen before reuses its buffers";
  // Backward follows the latest forward's batch.
  net->forward({x3}, true);
  EXPECT_TRUE(std::isfinite(net->backward(labels_array(net->context(), {1, 2, 3}))));
}

TEST(NetGraph, ForwardRejectsBadInputsNamingThem) {
  auto net = model("lenet");
  auto ctx = net->context();
  const auto wrong_shape = error_of([&] { net->forward({random_array(ctx, Shape{2, 1, 28, 27}, 1)}, false); });
  EXPECT_EQ(wrong_shape.code, ErrorCode::kShapeMismatch);
  EXPECT_NE(wrong_shape.message.find("input \"data\" has shape (2, 1, 28, 27), expected (batch, 1, 28, 28)"),
            std::string::npos)
      << wrong_shape.message;
  EXPECT_EQ(error_of([&] { net->forward({random_array(ctx, Shape{1, 28, 28}, 1)}, false); }).code,
            ErrorCode::kShapeMismatch);
  const auto ints = core::NDArray::zeros(ctx, core::DType::kInt32, Shape{2, 1, 28, 28});
  EXPECT_EQ(error_of([&] { net->forward({ints}, false); }).code, ErrorCode::kDtypeMismatch);
  EXPECT_EQ(error_of([&] { net->forward({}, false); }).code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(error_of([&] { net->output(0); }).code, ErrorCode::kBadState);
  EXPECT_EQ(error_of([&] { net->backward(labels_array(ctx, {0})); }).code, ErrorCode::kBadState);

  net->forward({random_array(ctx, Shape{2, 1, 28, 28}, 1)}, true);
  EXPECT_EQ(error_of([&] { net->output(1); }).code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(error_of([&] { net->backward(labels_array(ctx, {0, 1, 2})); }).code, ErrorCode::kShapeMismatch);
  const auto float_labels = core::NDArray::zeros(ctx, core::DType::kFloat32, Shape{2});
  EXPECT_EQ(error_of([&] { net->backward(float_labels); }).code, ErrorCode::kDtypeMismatch);
  EXPECT_EQ(error_of([&] { net->backward(labels_array(ctx, {0, 10})); }).code, ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace dt::nn
