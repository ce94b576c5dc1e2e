// A net whose 4-d part runs in NHWC (DT_CONV_LAYOUT's rewrite,
// nn/net_layout.h) on the GPU against the same net in NCHW: the CPU test's
// conv-BN-ReLU-pool-dense net and residual block, each trained a few SGD steps
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
#include "unit/nn/net/layout_test_nets.h"

namespace dt {
namespace {

using core::DType;

// Convolutions on the GPU need cuDNN.
#if DT_WITH_CUDNN
void expect_layouts_train_alike(const nn::NetDescription& description, const core::Shape& sample, int64_t classes,
                                DType dtype, gpu_test::Tolerance tol) {
  SCOPED_TRACE(core::dtype_name(dtype));
  auto gpu = core::cuda::make_gpu_context(0);
  nn::Net nchw(description, gpu);
  nn::Net nhwc(nn::with_activation_layout(description, ops::TensorLayout::kNHWC), gpu);
  for (nn::Net* net : {&nchw, &nhwc}) {
    if (dtype != DType::kFloat32) net->set_compute_dtype(dtype);
    net->initialize(38);
  }
  auto cpu = core::make_cpu_context();
  const int64_t batch = 32;
  for (int step = 0; step < 5; ++step) {
    const core::Shape shape({batch, sample[0], sample[1], sample[2]});
    const std::vector<float> values = gpu_test::random_values(static_cast<size_t>(shape.numel()), 50 + step);
    core::NDArray x = core::NDArray::empty(cpu, DType::kFloat32, shape);
    x.copy_from_host(values.data(), values.size() * sizeof(float));
    std::vector<int32_t> labels;
    for (int64_t i = 0; i < batch; ++i) labels.push_back(static_cast<int32_t>((i * 7 + step) % classes));
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

void expect_both_nets_train_alike(DType dtype, gpu_test::Tolerance tol) {
  expect_layouts_train_alike(nn::testing::conv_bn_pool_dense(), core::Shape({3, 10, 9}), 5, dtype, tol);
  expect_layouts_train_alike(nn::testing::residual_block(), core::Shape({4, 8, 8}), 3, dtype, tol);
}

TEST(GpuLayoutNet, NhwcTrainsAsNchwInFloat32) { expect_both_nets_train_alike(DType::kFloat32, {1e-3, 1e-4}); }

TEST(GpuLayoutNet, NhwcTrainsAsNchwInBfloat16) { expect_both_nets_train_alike(DType::kBFloat16, {3e-2, 3e-3}); }
#endif

}  // namespace
}  // namespace dt
