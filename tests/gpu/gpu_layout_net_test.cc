// A net whose 4-d part runs in NHWC (DT_CONV_LAYOUT's rewrite,
// nn/net_layout.h) on the GPU against the same net in NCHW: a small
// conv-BN-ReLU-pool-dense net with a residual Add, trained a few SGD steps
// from the same weights on the same batches, in float32 and bfloat16. The
// parameters must agree: float32 as gpu_ops_test's sums (cuDNN may pick other
// algorithms per layout), bfloat16 within its 8-bit mantissa's rounding of
// the weight copies and activations. Without a visible device the program
// reports a skip (exit code 77).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/context.h"
#include "core/cuda/gpu_context.h"
#include "core/dtype.h"
#include "gpu/gpu_test_util.h"
#include "nn/net.h"
#include "nn/net_description.h"
#include "nn/net_layout.h"
#include "ops/tensor_math.h"

namespace dt {
namespace {

using core::DType;

// Convolutions on the GPU need cuDNN.
#if DT_WITH_CUDNN
nn::NetDescription residual_net() {
  return nn::parse_net_description(R"({
    "format": "disttrain.net", "version": 1,
    "inputs": [{"name": "data", "shape": [3, 16, 16]}],
    "layers": [
      {"name": "stem", "type": "Conv2D", "channels": 16, "kernel_size": 3, "padding": 1, "use_bias": false},
      {"name": "stem_bn", "type": "BatchNorm"},
      {"name": "a", "type": "ReLU"},
      {"name": "conv", "type": "Conv2D", "channels": 16, "kernel_size": 3, "padding": 1},
      {"name": "b", "type": "BatchNorm"},
      {"name": "sum", "type": "Add", "inputs": ["a", "b"]},
      {"name": "relu", "type": "ReLU"},
      {"name": "pool", "type": "MaxPool2D", "pool_size": 2},
      {"name": "conv2", "type": "Conv2D", "channels": 8, "kernel_size": 3, "strides": 2},
      {"name": "flat", "type": "Flatten"},
      {"name": "fc", "type": "Dense", "units": 10}
    ]})");
}

void expect_layouts_train_alike(DType dtype, gpu_test::Tolerance tol) {
  SCOPED_TRACE(core::dtype_name(dtype));
  auto gpu = core::cuda::make_gpu_context(0);
  nn::Net nchw(residual_net(), gpu);
  nn::Net nhwc(nn::with_activation_layout(residual_net(), ops::TensorLayout::kNHWC), gpu);
  for (nn::Net* net : {&nchw, &nhwc}) {
    if (dtype != DType::kFloat32) net->set_compute_dtype(dtype);
    net->initialize(38);
  }
  auto cpu = core::make_cpu_context();
  const int64_t batch = 32;
  for (int step = 0; step < 5; ++step) {
    const std::vector<float> values = gpu_test::random_values(static_cast<size_t>(batch * 3 * 16 * 16), 50 + step);
    core::NDArray x = core::NDArray::empty(cpu, DType::kFloat32, core::Shape({batch, 3, 16, 16}));
    x.copy_from_host(values.data(), values.size() * sizeof(float));
    std::vector<int32_t> labels;
    for (int64_t i = 0; i < batch; ++i) labels.push_back(static_cast<int32_t>((i * 7 + step) % 10));
    core::NDArray y = core::NDArray::empty(cpu, DType::kInt32, core::Shape({batch}));
    y.copy_from_host(labels.data(), labels.size() * sizeof(int32_t));
    for (nn::Net* net : {&nchw, &nhwc}) {
      net->forward({x}, true);
      net->backward(y);
      for (nn::Parameter& p : net->parameters()) {
        if (!p.auxiliary) ops::axpy(p.value, -0.05, p.grad);
      }
    }
  }
  gpu_test::expect_same_weights(nchw, nhwc, tol, "after 5 steps");
}

TEST(GpuLayoutNet, NhwcTrainsAsNchwInFloat32) { expect_layouts_train_alike(DType::kFloat32, {1e-3, 1e-4}); }

TEST(GpuLayoutNet, NhwcTrainsAsNchwInBfloat16) { expect_layouts_train_alike(DType::kBFloat16, {3e-2, 3e-3}); }
#endif

}  // namespace
}  // namespace dt
