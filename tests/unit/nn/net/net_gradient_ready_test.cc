// The gradient-ready callback of backward: each learnable parameter is
// reported exactly once, from the last layer to the first, and its gradient
// is already final when it is reported (what lets a trainer send it while
// backward goes on).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "nn/net.h"
#include "net_test_util.h"

namespace dt::nn {
namespace {

using core::Shape;
using testing::labels_array;
using testing::random_array;
using testing::to_vector;

// conv -> batch norm (auxiliary states) -> relu -> flatten -> fc1 -> fc2.
const char* kConvNet = R"({
  "format": "disttrain.net", "version": 1,
  "inputs": [{"name": "x", "shape": [1, 6, 6]}],
  "layers": [
    {"name": "conv", "type": "Conv2D", "channels": 2, "kernel_size": [3, 3]},
    {"name": "bn", "type": "BatchNorm"},
    {"name": "act", "type": "ReLU"},
    {"name": "flat", "type": "Flatten"},
    {"name": "fc1", "type": "Dense", "units": 5},
    {"name": "fc2", "type": "Dense", "units": 3}
  ],
  "loss": {"type": "SoftmaxCrossEntropy", "reduction": "sum"}
})";

std::string layer_of(const std::string& param_name) { return param_name.substr(0, param_name.find('.')); }

TEST(NetGradientReady, EveryLearnableParameterOnceFromTheLastLayerWithItsFinalGradient) {
  auto net = net_from_json(kConvNet, core::make_cpu_context());
  net->initialize(3);
  net->set_grad_req("fc1.bias", GradReq::kNull);
  const auto x = random_array(net->context(), Shape{4, 1, 6, 6}, 5);
  const auto labels = labels_array(net->context(), {0, 1, 2, 1});
  net->forward({x}, true);

  std::vector<size_t> reported;
  std::map<size_t, std::vector<float>> at_report;
  net->backward(labels, [&](size_t index) {
    reported.push_back(index);
    at_report[index] = to_vector(net->parameters()[index].grad);
  });

  const auto& params = net->parameters();
  std::vector<size_t> expected_set;
  for (size_t i = 0; i < params.size(); ++i) {
    if (!params[i].auxiliary && params[i].grad_req != GradReq::kNull) expected_set.push_back(i);
  }
  std::vector<size_t> sorted = reported;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, expected_set) << "each learnable, non-frozen parameter once; no auxiliary state, no frozen one";

  // Layers in reverse execution order.
  const auto order = net->topological_order();
  std::map<std::string, size_t> position;
  for (size_t i = 0; i < order.size(); ++i) position[order[i]] = i;
  for (size_t k = 1; k < reported.size(); ++k) {
    EXPECT_GE(position.at(layer_of(params[reported[k - 1]].name)), position.at(layer_of(params[reported[k]].name)))
        << params[reported[k - 1]].name << " before " << params[reported[k]].name;
  }
  EXPECT_EQ(layer_of(params[reported.front()].name), "fc2");
  EXPECT_EQ(layer_of(params[reported.back()].name), "conv");

  // Nothing changes a gradient after it was reported.
  for (const auto& [index, values] : at_report) {
    EXPECT_EQ(values, to_vector(params[index].grad)) << params[index].name;
  }

  // The same gradients as a backward without the callback.
  net->forward({x}, true);
  net->backward(labels);
  for (const auto& [index, values] : at_report) EXPECT_EQ(values, to_vector(params[index].grad)) << params[index].name;
}

TEST(NetGradientReady, AnExceptionFromTheCallbackEndsBackward) {
  auto net = net_from_json(kConvNet, core::make_cpu_context());
  net->initialize(3);
  net->forward({random_array(net->context(), Shape{2, 1, 6, 6}, 5)}, true);
  int calls = 0;
  EXPECT_THROW(net->backward(labels_array(net->context(), {0, 1}),
                             [&](size_t) {
                               ++calls;
                               throw core::Error(core::ErrorCode::kPeerLost, "server 0 lost");
                             }),
               core::Error);
  EXPECT_EQ(calls, 1);
}

}  // namespace
}  // namespace dt::nn
