// The factories of ops/: a CPU target gets the CPU kernel (here checked on
// small known results, the kernels themselves have their own tests), a CPU
// target without an engine is a clear error, and whether a GPU convolution
// exists follows the build. GPU targets are covered by tests/gpu.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <vector>

#include "core/context.h"
#include "core/error.h"
#include "ops/batch_norm.h"
#include "ops/conv2d.h"
#include "ops/cpu/cpu_engine.h"
#include "ops/eltwise.h"
#include "ops/inner_product.h"
#include "ops/pooling.h"
#include "ops/softmax_cross_entropy.h"

namespace dt::ops {
namespace {

class OpFactoryTest : public ::testing::Test {
 protected:
  Target cpu_target() const {
    Target target;
    target.context = core::make_cpu_context();
    target.engine = &engine_;
    return target;
  }

  cpu::CpuEngine engine_{1};
};

TEST_F(OpFactoryTest, ACpuTargetIsNotOnAGpu) { EXPECT_FALSE(cpu_target().on_gpu()); }

TEST_F(OpFactoryTest, InnerProductOnTheCpu) {
  const auto op = make_inner_product(cpu_target(), InnerProductParams{1, 2, 1, true});
  const std::vector<float> x{1.0f, 2.0f}, w{2.0f, 3.0f}, b{0.5f};
  std::vector<float> y(1);
  op->forward(x.data(), w.data(), b.data(), y.data());
  EXPECT_FLOAT_EQ(y[0], 8.5f);
}

TEST_F(OpFactoryTest, EltwiseOnTheCpu) {
  const auto op = make_eltwise(cpu_target(), Activation::kRelu, 3);
  const std::vector<float> x{-1.0f, 0.5f, 2.0f};
  std::vector<float> y(3);
  op->forward(x.data(), y.data());
  EXPECT_EQ(y, (std::vector<float>{0.0f, 0.5f, 2.0f}));
}

TEST_F(OpFactoryTest, PoolingOnTheCpu) {
  Pool2DParams p;
  p.N = 1, p.C = 1, p.H = 2, p.W = 2;
  const std::vector<float> x{1.0f, 4.0f, 3.0f, 2.0f};
  std::vector<float> y(1);
  make_max_pool2d(cpu_target(), p)->forward_inference(x.data(), y.data());
  EXPECT_EQ(y[0], 4.0f);
  make_avg_pool2d(cpu_target(), p, true)->forward(x.data(), y.data());
  EXPECT_FLOAT_EQ(y[0], 2.5f);
  make_global_avg_pool2d(cpu_target(), 1, 1, 2, 2)->forward(x.data(), y.data());
  EXPECT_FLOAT_EQ(y[0], 2.5f);
}

TEST_F(OpFactoryTest, SoftmaxCrossEntropyNeedsNoEngine) {
  Target target;
  target.context = core::make_cpu_context();
  const auto op = make_softmax_cross_entropy(target, 1, 2, Reduction::kMean);
  const std::vector<float> logits{0.0f, 0.0f};
  const std::vector<int32_t> labels{1};
  EXPECT_NEAR(op->forward(logits.data(), labels.data()), 0.69314718f, 1e-6f);
}

TEST_F(OpFactoryTest, ACpuTargetWithoutAnEngineIsABadState) {
  Target target;
  target.context = core::make_cpu_context();
  Conv2DParams conv;
  conv.N = conv.C = conv.H = conv.W = conv.K = 1;
  Pool2DParams pool;
  pool.N = pool.C = pool.H = pool.W = 2;
  const std::vector<std::function<void()>> makes{
      [&] { make_inner_product(target, InnerProductParams{1, 1, 1, true}); },
      [&] { make_conv2d(target, conv); },
      [&] { make_max_pool2d(target, pool); },
      [&] { make_avg_pool2d(target, pool, true); },
      [&] { make_global_avg_pool2d(target, 1, 1, 1, 1); },
      [&] { make_batch_norm(target, BatchNormParams{1, 1, 1, 1}); },
      [&] { make_eltwise(target, Activation::kTanh, 1); },
  };
  for (size_t i = 0; i < makes.size(); ++i) {
    try {
      makes[i]();
      ADD_FAILURE() << "factory " << i << " built a CPU op without an engine";
    } catch (const core::Error& e) {
      EXPECT_EQ(e.code(), core::ErrorCode::kBadState) << i << ": " << e.what();
    }
  }
}

TEST_F(OpFactoryTest, AGpuConvolutionExistsExactlyWithCudnn) { EXPECT_EQ(gpu_conv2d_available(), DT_WITH_CUDNN != 0); }

}  // namespace
}  // namespace dt::ops
