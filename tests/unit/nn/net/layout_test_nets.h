// Two small nets with every layer kind a layout changes (conv with groups,
// stride and bias, batch norm, ReLU, max and average pooling, Flatten,
// Dense; a residual Add and global pooling), shared by the CPU and GPU
// tests of the NHWC rewrite (nn/net_layout.h).
#pragma once

#include "nn/net_description.h"

namespace dt::nn::testing {

// Input (3, 10, 9), 5 classes.
inline NetDescription conv_bn_pool_dense() {
  return parse_net_description(R"({
    "format": "disttrain.net", "version": 1,
    "inputs": [{"name": "data", "shape": [3, 10, 9]}],
    "layers": [
      {"name": "conv1", "type": "Conv2D", "channels": 8, "kernel_size": 3, "padding": 1},
      {"name": "bn1", "type": "BatchNorm"},
      {"name": "relu1", "type": "ReLU"},
      {"name": "pool1", "type": "MaxPool2D", "pool_size": 2},
      {"name": "conv2", "type": "Conv2D", "channels": 6, "kernel_size": 3, "strides": 2, "groups": 2},
      {"name": "pool2", "type": "AvgPool2D", "pool_size": 1},
      {"name": "flat", "type": "Flatten"},
      {"name": "fc", "type": "Dense", "units": 5}
    ]})");
}

// Input (4, 8, 8), 3 classes.
inline NetDescription residual_block() {
  return parse_net_description(R"({
    "format": "disttrain.net", "version": 1,
    "inputs": [{"name": "data", "shape": [4, 8, 8]}],
    "layers": [
      {"name": "stem", "type": "Conv2D", "channels": 8, "kernel_size": 3, "padding": 1, "use_bias": false},
      {"name": "stem_bn", "type": "BatchNorm"},
      {"name": "a", "type": "ReLU"},
      {"name": "conv", "type": "Conv2D", "channels": 8, "kernel_size": 3, "padding": 1},
      {"name": "b", "type": "BatchNorm"},
      {"name": "sum", "type": "Add", "inputs": ["a", "b"]},
      {"name": "out", "type": "ReLU"},
      {"name": "gap", "type": "GlobalAvgPool2D"},
      {"name": "fc", "type": "Dense", "units": 3}
    ]})");
}

}  // namespace dt::nn::testing
