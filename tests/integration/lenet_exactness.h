// The LeNet exactness set-up shared by the distributed tests: a net, a fixed
// synthetic batch and an optimizer for which a dist_sync job and one process
// must produce bit-identical weights.
#pragma once

#include <cmath>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "core/context.h"
#include "core/ndarray.h"
#include "nn/model_builders.h"
#include "nn/net.h"
#include "optim/optimizer_config.h"

namespace dt::test {

inline std::shared_ptr<core::Context> single_thread_cpu() {
  auto ctx = core::make_cpu_context();
  ctx->set_num_threads(1);  // results must not depend on how kernels split work
  return ctx;
}

inline std::shared_ptr<nn::Net> lenet() {
  auto net = std::make_shared<nn::Net>(nn::build_model_description_from_text("lenet", ""), single_thread_cpu());
  net->initialize(7);
  return net;
}

// Images and labels [begin, end) of a fixed synthetic set.
inline std::pair<core::NDArray, core::NDArray> batch(int64_t begin, int64_t end) {
  using core::DType;
  using core::NDArray;
  using core::Shape;
  const int64_t n = end - begin;
  NDArray images = NDArray::empty(core::make_cpu_context(), DType::kFloat32, Shape({n, 1, 28, 28}));
  NDArray labels = NDArray::empty(core::make_cpu_context(), DType::kInt32, Shape({n}));
  float* x = images.data_as<float>();
  int32_t* y = labels.data_as<int32_t>();
  for (int64_t i = 0; i < n; ++i) {
    y[i] = static_cast<int32_t>((begin + i) % 10);
    for (int64_t p = 0; p < 28 * 28; ++p) x[i * 784 + p] = std::sin(0.01f * float((begin + i) * 784 + p) + float(y[i]));
  }
  return {images, labels};
}

// A net's learnable weights, in parameter order: what exactness compares.
inline std::vector<float> weights(const nn::Net& net) {
  std::vector<float> out;
  for (const nn::Parameter& p : net.parameters()) {
    if (p.auxiliary) continue;
    const float* v = p.value.data_as<float>();
    out.insert(out.end(), v, v + p.value.size());
  }
  return out;
}

// sgd with momentum and no weight decay. The trainer rescales by 1/(its own
// batch): 1/8 on each worker, 1/16 for the single process. Halving the
// learning rate on the workers makes lr * rescale the same product: scaling
// by powers of two is exact in floating point, so the updates must agree bit
// for bit (wd would add a term that does not scale, hence 0).
inline optim::OptimizerConfig sgd(double lr) {
  return optim::OptimizerConfig("sgd").set("learning_rate", lr).set("momentum", 0.9).set("wd", 0.0);
}

}  // namespace dt::test
