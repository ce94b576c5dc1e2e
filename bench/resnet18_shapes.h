// ResNet-18's trainable parameter shapes (44.7 MB of float32 gradients):
// the gradient set the parameter-server benches move.
#pragma once

#include <vector>

#include "core/context.h"
#include "nn/model_builders.h"
#include "nn/net.h"

inline std::vector<dt::core::Shape> resnet18_shapes() {
  dt::nn::Net net(dt::nn::build_model_description_from_text("resnet18", ""), dt::core::make_cpu_context());
  std::vector<dt::core::Shape> shapes;
  for (const auto& p : net.parameters()) {
    if (!p.auxiliary) shapes.push_back(p.value.shape());
  }
  return shapes;
}
