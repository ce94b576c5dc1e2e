// The CPU kernels in NHWC against the same kernels in NCHW: each op runs on
// random inputs in NCHW, and again on the same inputs converted to NHWC;
// the NHWC results, converted back, must equal the NCHW ones (exactly where
// only the order of reads changes, within float rounding where oneDNN may
// sum in another order). Weights stay OIHW in both.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "ops/batch_norm.h"
#include "ops/conv2d.h"
#include "ops/cpu/batch_norm.h"
#include "ops/cpu/conv2d.h"
#include "ops/cpu/cpu_engine.h"
#include "ops/cpu/layout_convert.h"
#include "ops/cpu/pooling.h"
#include "ops/pooling.h"
#include "ops/tensor_layout.h"
#include "unit/ops/ops_test_util.h"

namespace dt::ops::cpu {
namespace {

using testing::all_close;
using testing::random_vector;
constexpr TensorLayout kNCHW = TensorLayout::kNCHW;
constexpr TensorLayout kNHWC = TensorLayout::kNHWC;

std::vector<float> to_layout(const std::vector<float>& v, TensorLayout to, TensorLayout from, LogicalDims d) {
  std::vector<float> out(v.size());
  convert_layout(out.data(), to, v.data(), from, d, sizeof(float));
  return out;
}
std::vector<float> to_nhwc(const std::vector<float>& nchw, LogicalDims d) {
  return to_layout(nchw, kNHWC, kNCHW, d);
}
std::vector<float> to_nchw(const std::vector<float>& nhwc, LogicalDims d) {
  return to_layout(nhwc, kNCHW, kNHWC, d);
}

class NhwcOpsTest : public ::testing::Test {
 protected:
  CpuEngine engine_{2};
};

void check_conv(const CpuEngine& engine, Conv2DParams p, uint32_t seed) {
  const LogicalDims xd{p.N, p.C, p.H, p.W}, yd{p.N, p.K, p.out_h(), p.out_w()};
  const testing::ConvInputs in = testing::conv_inputs(p, seed);
  const size_t nx = in.nx, nw = in.nw, ny = in.ny, nb = in.nb;
  const std::vector<float>&x = in.x, &w = in.w, &b = in.b, &dy = in.dy;
  p.layout = kNCHW;
  Conv2D nchw(engine, p);
  std::vector<float> y(ny), dx(nx), dw(nw), db(nb);
  nchw.forward(x.data(), w.data(), b.data(), y.data());
  nchw.backward_data(dy.data(), w.data(), dx.data());
  nchw.backward_weights(x.data(), dy.data(), dw.data(), db.data());

  p.layout = kNHWC;
  Conv2D nhwc(engine, p);
  const std::vector<float> x2 = to_nhwc(x, xd), dy2 = to_nhwc(dy, yd);
  std::vector<float> y2(ny), dx2(nx), dw2(nw), db2(nb);
  nhwc.forward(x2.data(), w.data(), b.data(), y2.data());
  nhwc.backward_data(dy2.data(), w.data(), dx2.data());
  nhwc.backward_weights(x2.data(), dy2.data(), dw2.data(), db2.data());
  EXPECT_TRUE(all_close(to_nchw(y2, yd), y, 1e-5, 1e-5)) << "y";
  EXPECT_TRUE(all_close(to_nchw(dx2, xd), dx, 1e-5, 1e-5)) << "dx";
  EXPECT_TRUE(all_close(dw2, dw, 1e-4, 1e-4)) << "dw";
  if (p.has_bias) EXPECT_TRUE(all_close(db2, db, 1e-4, 1e-4)) << "db";
  // The NHWC output is not just the NCHW bytes: the test can tell them apart.
  EXPECT_FALSE(all_close(y2, y, 1e-5, 1e-5));
}

TEST_F(NhwcOpsTest, ConvolutionStridedPaddedWithBias) {
  Conv2DParams p;
  p.N = 2, p.C = 3, p.H = 7, p.W = 9, p.K = 4, p.R = 3, p.S = 3;
  p.stride_h = 2, p.stride_w = 2, p.pad_h = 1, p.pad_w = 1;
  check_conv(engine_, p, 10);
}

TEST_F(NhwcOpsTest, ConvolutionGroupedWithoutBias) {
  Conv2DParams p;
  p.N = 2, p.C = 8, p.H = 9, p.W = 9, p.K = 12, p.R = 3, p.S = 3, p.pad_h = 1, p.pad_w = 1, p.groups = 4;
  p.has_bias = false;
  check_conv(engine_, p, 20);
}

TEST_F(NhwcOpsTest, ConvolutionWideDilatedNonSquare) {
  Conv2DParams p;  // enough channels that oneDNN picks a blocked layout inside
  p.N = 3, p.C = 16, p.H = 11, p.W = 6, p.K = 32, p.R = 3, p.S = 1, p.pad_h = 2, p.dilation_h = 2;
  check_conv(engine_, p, 30);
}

TEST_F(NhwcOpsTest, BatchNormTrainingInferenceAndBackward) {
  BatchNormParams p;
  p.N = 3, p.C = 5, p.H = 4, p.W = 3;
  const LogicalDims d{p.N, p.C, p.H, p.W};
  const size_t n = static_cast<size_t>(p.N * p.C * p.H * p.W), c = static_cast<size_t>(p.C);
  const std::vector<float> x = random_vector(n, 40, -2.0f, 3.0f), dy = random_vector(n, 41);
  const std::vector<float> gamma = random_vector(c, 42, 0.5f, 1.5f), beta = random_vector(c, 43);
  struct Result {
    std::vector<float> y, mean, var, run_mean, run_var, inference, dx, dgamma, dbeta;
  };
  auto run = [&](TensorLayout layout) {
    p.layout = layout;
    BatchNorm bn(engine_, p);
    const std::vector<float> xin = layout == kNHWC ? to_nhwc(x, d) : x;
    const std::vector<float> dyin = layout == kNHWC ? to_nhwc(dy, d) : dy;
    Result r{std::vector<float>(n), std::vector<float>(c), std::vector<float>(c), std::vector<float>(c, 0.1f),
             std::vector<float>(c, 0.9f), std::vector<float>(n), std::vector<float>(n), std::vector<float>(c),
             std::vector<float>(c)};
    bn.forward_training(xin.data(), gamma.data(), beta.data(), r.y.data(), r.mean.data(), r.var.data(),
                        r.run_mean.data(), r.run_var.data());
    bn.forward_inference(xin.data(), gamma.data(), beta.data(), r.run_mean.data(), r.run_var.data(),
                         r.inference.data());
    bn.backward(xin.data(), dyin.data(), gamma.data(), r.mean.data(), r.var.data(), r.dx.data(),
                r.dgamma.data(), r.dbeta.data());
    if (layout == kNHWC) {
      r.y = to_nchw(r.y, d);
      r.inference = to_nchw(r.inference, d);
      r.dx = to_nchw(r.dx, d);
    }
    return r;
  };
  const Result a = run(kNCHW), b = run(kNHWC);
  EXPECT_TRUE(all_close(b.y, a.y, 1e-5, 1e-5)) << "y";
  EXPECT_TRUE(all_close(b.mean, a.mean, 1e-5, 1e-6)) << "saved mean";
  EXPECT_TRUE(all_close(b.var, a.var, 1e-5, 1e-6)) << "saved var";
  EXPECT_TRUE(all_close(b.run_mean, a.run_mean, 1e-5, 1e-6)) << "running mean";
  EXPECT_TRUE(all_close(b.run_var, a.run_var, 1e-5, 1e-6)) << "running var";
  EXPECT_TRUE(all_close(b.inference, a.inference, 1e-5, 1e-5)) << "inference";
  EXPECT_TRUE(all_close(b.dx, a.dx, 1e-4, 1e-5)) << "dx";
  EXPECT_TRUE(all_close(b.dgamma, a.dgamma, 1e-4, 1e-5)) << "dgamma";
  EXPECT_TRUE(all_close(b.dbeta, a.dbeta, 1e-4, 1e-5)) << "dbeta";
}

Pool2DParams pool_params() {
  Pool2DParams p;
  p.N = 2, p.C = 3, p.H = 7, p.W = 8, p.kernel_h = 3, p.kernel_w = 2, p.stride_h = 2, p.stride_w = 1;
  p.pad_h = 1, p.pad_w = 1;
  return p;
}

TEST_F(NhwcOpsTest, MaxPoolingForwardAndBackwardAreExact) {
  Pool2DParams p = pool_params();
  const LogicalDims xd{p.N, p.C, p.H, p.W}, yd{p.N, p.C, p.out_h(), p.out_w()};
  const size_t nx = static_cast<size_t>(p.N * p.C * p.H * p.W), ny = static_cast<size_t>(p.N * p.C * p.out_h() * p.out_w());
  const std::vector<float> x = random_vector(nx, 50), dy = random_vector(ny, 51);
  MaxPool2D nchw(engine_, p);
  std::vector<float> y(ny), yi(ny), dx(nx);
  nchw.forward_inference(x.data(), yi.data());
  nchw.forward_training(x.data(), y.data());
  nchw.backward(dy.data(), dx.data());
  p.layout = kNHWC;
  MaxPool2D nhwc(engine_, p);
  const std::vector<float> x2 = to_nhwc(x, xd), dy2 = to_nhwc(dy, yd);
  std::vector<float> y2(ny), yi2(ny), dx2(nx, 7.0f);  // stale values must be overwritten
  nhwc.forward_inference(x2.data(), yi2.data());
  nhwc.forward_training(x2.data(), y2.data());
  nhwc.backward(dy2.data(), dx2.data());
  EXPECT_EQ(to_nchw(y2, yd), y);
  EXPECT_EQ(to_nchw(yi2, yd), yi);
  EXPECT_EQ(to_nchw(dx2, xd), dx);
}

TEST_F(NhwcOpsTest, AveragePoolingBothPaddingRules) {
  for (const bool include_pad : {true, false}) {
    Pool2DParams p = pool_params();
    const LogicalDims xd{p.N, p.C, p.H, p.W}, yd{p.N, p.C, p.out_h(), p.out_w()};
    const size_t nx = static_cast<size_t>(p.N * p.C * p.H * p.W), ny = static_cast<size_t>(p.N * p.C * p.out_h() * p.out_w());
    const std::vector<float> x = random_vector(nx, 60), dy = random_vector(ny, 61);
    AvgPool2D nchw(engine_, p, include_pad);
    std::vector<float> y(ny), dx(nx);
    nchw.forward(x.data(), y.data());
    nchw.backward(dy.data(), dx.data());
    p.layout = kNHWC;
    AvgPool2D nhwc(engine_, p, include_pad);
    std::vector<float> y2(ny), dx2(nx);
    nhwc.forward(to_nhwc(x, xd).data(), y2.data());
    nhwc.backward(to_nhwc(dy, yd).data(), dx2.data());
    EXPECT_TRUE(all_close(to_nchw(y2, yd), y, 1e-6, 1e-6)) << include_pad;
    EXPECT_TRUE(all_close(to_nchw(dx2, xd), dx, 1e-6, 1e-6)) << include_pad;
  }
}

TEST_F(NhwcOpsTest, GlobalAveragePooling) {
  const LogicalDims d{2, 5, 3, 4};
  const size_t nx = 2 * 5 * 3 * 4, ny = 10;
  const std::vector<float> x = random_vector(nx, 70), dy = random_vector(ny, 71);
  GlobalAvgPool2D nchw(engine_, d.N, d.C, d.H, d.W, kNCHW), nhwc(engine_, d.N, d.C, d.H, d.W, kNHWC);
  std::vector<float> y(ny), y2(ny), dx(nx), dx2(nx);
  nchw.forward(x.data(), y.data());
  nchw.backward(dy.data(), dx.data());
  nhwc.forward(to_nhwc(x, d).data(), y2.data());
  nhwc.backward(dy.data(), dx2.data());
  EXPECT_TRUE(all_close(y2, y, 1e-6, 1e-6));
  EXPECT_EQ(to_nchw(dx2, d), dx);
}

}  // namespace
}  // namespace dt::ops::cpu
