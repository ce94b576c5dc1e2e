// NHWC on the GPU: the layout conversion kernel against the CPU one (the
// same bits, it only moves them), in every dtype a net's activations use;
// then every GPU op that takes a layout (convolution with its KRSC filter
// and bias, batch norm, the poolings) in NHWC against the same op in NCHW
// on the same inputs, results converted back. Tolerances as gpu_ops_test's
// for float32 (cuDNN may pick other algorithms per layout); float16 keeps
// 16-bit outputs, rounded at 2^-11 relative, and sums in other orders.
// Without a visible device the program reports a skip (exit code 77).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <tuple>
#include <vector>

#include "core/context.h"
#include "core/cuda/gpu_context.h"
#include "core/dtype.h"
#include "core/ndarray.h"
#include "gpu/gpu_test_util.h"
#include "ops/batch_norm.h"
#include "ops/conv2d.h"
#include "ops/layout_convert.h"
#include "ops/pooling.h"
#include "ops/tensor_math.h"

namespace dt {
namespace {

using core::DType;
using core::NDArray;
using ops::TensorLayout;

TEST(GpuLayout, ConversionMatchesTheCpuBitForBit) {
  auto cpu = core::make_cpu_context();
  auto gpu = core::cuda::make_gpu_context(0);
  std::mt19937 gen(38);
  for (const DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    const ops::LogicalDims d{3, 5, 7, 9};
    NDArray x = NDArray::empty(cpu, dtype, ops::layout_shape(TensorLayout::kNCHW, d.N, d.C, d.H, d.W));
    auto* bytes = static_cast<unsigned char*>(x.data());
    for (size_t i = 0; i < x.nbytes(); ++i) bytes[i] = static_cast<unsigned char>(gen());
    const core::Shape nhwc_shape = ops::layout_shape(TensorLayout::kNHWC, d.N, d.C, d.H, d.W);
    NDArray want = NDArray::empty(cpu, dtype, nhwc_shape);
    ops::convert_layout(want, TensorLayout::kNHWC, x, TensorLayout::kNCHW);

    NDArray gx = NDArray::empty(gpu, dtype, x.shape());
    gx.copy_from_host(x.data(), x.nbytes());
    NDArray gy = NDArray::empty(gpu, dtype, nhwc_shape);
    NDArray gback = NDArray::empty(gpu, dtype, x.shape());
    ops::convert_layout(gy, TensorLayout::kNHWC, gx, TensorLayout::kNCHW);
    ops::convert_layout(gback, TensorLayout::kNCHW, gy, TensorLayout::kNHWC);
    std::vector<unsigned char> got(want.nbytes()), back(x.nbytes());
    gy.copy_to_host(got.data(), got.size());
    gback.copy_to_host(back.data(), back.size());
    EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size()), 0) << core::dtype_name(dtype);
    EXPECT_EQ(std::memcmp(back.data(), x.data(), back.size()), 0) << core::dtype_name(dtype);
  }
}

class GpuNhwcOps : public ::testing::Test {
 protected:
  // Values of standard deviation `scale` on the GPU in dtype, NCHW.
  NDArray random(const core::Shape& shape, uint32_t seed, DType dtype, float scale = 1.0f) {
    const std::vector<float> v = gpu_test::random_values(static_cast<size_t>(shape.numel()), seed, scale);
    NDArray f32 = NDArray::empty(gpu_, DType::kFloat32, shape);
    f32.copy_from_host(v.data(), v.size() * sizeof(float));
    if (dtype == DType::kFloat32) return f32;
    NDArray out = NDArray::empty(gpu_, dtype, shape);
    ops::cast(out, f32);
    return out;
  }
  NDArray like(const NDArray& a) { return NDArray::empty(gpu_, a.dtype(), a.shape()); }
  NDArray floats(int64_t n) { return NDArray::zeros(gpu_, DType::kFloat32, core::Shape({n})); }
  // An NCHW array in NHWC, and back.
  NDArray nhwc(const NDArray& nchw) {
    const ops::LogicalDims d = ops::logical_dims(TensorLayout::kNCHW, nchw.shape());
    NDArray out = NDArray::empty(gpu_, nchw.dtype(), ops::layout_shape(TensorLayout::kNHWC, d.N, d.C, d.H, d.W));
    ops::convert_layout(out, TensorLayout::kNHWC, nchw, TensorLayout::kNCHW);
    return out;
  }
  std::vector<float> nchw_floats(const NDArray& nhwc_array) {
    const ops::LogicalDims d = ops::logical_dims(TensorLayout::kNHWC, nhwc_array.shape());
    NDArray out = NDArray::empty(gpu_, nhwc_array.dtype(), core::Shape({d.N, d.C, d.H, d.W}));
    ops::convert_layout(out, TensorLayout::kNCHW, nhwc_array, TensorLayout::kNHWC);
    return gpu_test::host_floats(out);
  }
  ops::Target target(DType dtype) const { return ops::Target{gpu_, dtype, nullptr}; }

  void check_conv(ops::Conv2DParams p, DType dtype, gpu_test::Tolerance tol, gpu_test::Tolerance grad_tol);

  std::shared_ptr<core::Context> gpu_ = core::cuda::make_gpu_context(0);
};

void GpuNhwcOps::check_conv(ops::Conv2DParams p, DType dtype, gpu_test::Tolerance tol,
                            gpu_test::Tolerance grad_tol) {
  const NDArray x = random(core::Shape({p.N, p.C, p.H, p.W}), 1, dtype);
  const NDArray w = random(core::Shape({p.K, p.C / p.groups, p.R, p.S}), 2, dtype, 0.3f);
  const NDArray b = random(core::Shape({p.K}), 3, DType::kFloat32);
  const NDArray dy = random(core::Shape({p.N, p.K, p.out_h(), p.out_w()}), 4, dtype);
  NDArray y = like(dy), dx = like(x), dw = like(w), db = floats(p.K);
  auto nchw_op = ops::make_conv2d(target(dtype), p);
  nchw_op->forward(x.data(), w.data(), b.data_as<float>(), y.data());
  nchw_op->backward_data(dy.data(), w.data(), dx.data());
  nchw_op->backward_weights(x.data(), dy.data(), dw.data(), db.data_as<float>());

  p.layout = TensorLayout::kNHWC;
  const NDArray xh = nhwc(x), dyh = nhwc(dy);
  NDArray yh = like(dyh), dxh = like(xh), dwh = like(w), dbh = floats(p.K);
  auto nhwc_op = ops::make_conv2d(target(dtype), p);
  nhwc_op->forward(xh.data(), w.data(), b.data_as<float>(), yh.data());
  nhwc_op->backward_data(dyh.data(), w.data(), dxh.data());
  nhwc_op->backward_weights(xh.data(), dyh.data(), dwh.data(), dbh.data_as<float>());
  gpu_test::expect_close(gpu_test::host_floats(y), nchw_floats(yh), tol, "conv y");
  gpu_test::expect_close(gpu_test::host_floats(dx), nchw_floats(dxh), tol, "conv dx");
  // The weight gradient comes back OIHW, as the weights went in.
  gpu_test::expect_close(gpu_test::host_floats(dw), gpu_test::host_floats(dwh), grad_tol, "conv dw");
  if (p.has_bias) gpu_test::expect_close(gpu_test::host_floats(db), gpu_test::host_floats(dbh), grad_tol, "conv db");
}

#if DT_WITH_CUDNN
TEST_F(GpuNhwcOps, ConvolutionMatchesNchw) {
  ops::Conv2DParams strided;
  strided.N = 4, strided.C = 16, strided.H = 13, strided.W = 11, strided.K = 32, strided.R = 3, strided.S = 3;
  strided.stride_h = 2, strided.stride_w = 2, strided.pad_h = 1, strided.pad_w = 1;
  ops::Conv2DParams grouped;
  grouped.N = 2, grouped.C = 8, grouped.H = 9, grouped.W = 9, grouped.K = 16, grouped.R = 3, grouped.S = 3;
  grouped.pad_h = 1, grouped.pad_w = 1, grouped.groups = 4, grouped.has_bias = false;
  for (const ops::Conv2DParams& p : {strided, grouped}) {
    SCOPED_TRACE(p.groups);
    check_conv(p, DType::kFloat32, {1e-4, 1e-4}, {1e-3, 1e-3});
    check_conv(p, DType::kFloat16, {1e-2, 2e-2}, {2e-2, 1e-1});
    check_conv(p, DType::kBFloat16, {3e-2, 1e-1}, {5e-2, 5e-1});
  }
}
#endif

TEST_F(GpuNhwcOps, BatchNormMatchesNchw) {
  for (const DType dtype : {DType::kFloat32, DType::kFloat16}) {
    SCOPED_TRACE(core::dtype_name(dtype));
    ops::BatchNormParams p;
    p.N = 8, p.C = 24, p.H = 7, p.W = 5;
    const NDArray x = random(core::Shape({p.N, p.C, p.H, p.W}), 10, dtype, 2.0f);
    const NDArray dy = random(x.shape(), 11, dtype);
    const NDArray gamma = random(core::Shape({p.C}), 12, DType::kFloat32), beta = random(core::Shape({p.C}), 13, DType::kFloat32);
    struct Out {
      NDArray y, inference, dx, mean, var, run_mean, run_var, dgamma, dbeta;
    };
    auto run = [&](TensorLayout layout, const NDArray& xin, const NDArray& dyin) {
      p.layout = layout;
      Out o{like(xin), like(xin), like(xin), floats(p.C), floats(p.C), floats(p.C), floats(p.C), floats(p.C),
            floats(p.C)};
      auto op = ops::make_batch_norm(target(dtype), p);
      op->forward_training(xin.data(), gamma.data_as<float>(), beta.data_as<float>(), o.y.data(),
                           o.mean.data_as<float>(), o.var.data_as<float>(), o.run_mean.data_as<float>(),
                           o.run_var.data_as<float>());
      op->forward_inference(xin.data(), gamma.data_as<float>(), beta.data_as<float>(), o.run_mean.data_as<float>(),
                            o.run_var.data_as<float>(), o.inference.data());
      op->backward(xin.data(), dyin.data(), gamma.data_as<float>(), o.mean.data_as<float>(), o.var.data_as<float>(),
                   o.dx.data(), o.dgamma.data_as<float>(), o.dbeta.data_as<float>());
      return o;
    };
    const Out a = run(TensorLayout::kNCHW, x, dy);
    const Out b = run(TensorLayout::kNHWC, nhwc(x), nhwc(dy));
    const gpu_test::Tolerance tol = dtype == DType::kFloat32 ? gpu_test::Tolerance{1e-4, 1e-4}
                                                             : gpu_test::Tolerance{1e-2, 1e-2};
    using gpu_test::host_floats;
    gpu_test::expect_close(host_floats(a.y), nchw_floats(b.y), tol, "bn y");
    gpu_test::expect_close(host_floats(a.inference), nchw_floats(b.inference), tol, "bn inference");
    gpu_test::expect_close(host_floats(a.dx), nchw_floats(b.dx), tol, "bn dx");
    for (const auto& [want, got, what] : {std::tuple{&a.mean, &b.mean, "mean"}, {&a.var, &b.var, "var"},
                                          {&a.run_mean, &b.run_mean, "running mean"},
                                          {&a.run_var, &b.run_var, "running var"}, {&a.dgamma, &b.dgamma, "dgamma"},
                                          {&a.dbeta, &b.dbeta, "dbeta"}}) {
      gpu_test::expect_close(host_floats(*want), host_floats(*got), {1e-3, 1e-3}, what);
    }
  }
}

TEST_F(GpuNhwcOps, PoolingMatchesNchw) {
  for (const DType dtype : {DType::kFloat32, DType::kBFloat16}) {
    SCOPED_TRACE(core::dtype_name(dtype));
    ops::Pool2DParams p;
    p.N = 3, p.C = 10, p.H = 11, p.W = 9, p.kernel_h = 3, p.kernel_w = 2, p.stride_h = 2, p.stride_w = 1;
    p.pad_h = 1, p.pad_w = 1;
    const NDArray x = random(core::Shape({p.N, p.C, p.H, p.W}), 20, dtype);
    const NDArray dy = random(core::Shape({p.N, p.C, p.out_h(), p.out_w()}), 21, dtype);
    const NDArray xh = nhwc(x), dyh = nhwc(dy);
    using gpu_test::host_floats;
    {
      NDArray y = like(dy), dx = like(x), yh = like(dyh), dxh = like(xh);
      auto a = ops::make_max_pool2d(target(dtype), p);
      a->forward_training(x.data(), y.data());
      a->backward(dy.data(), dx.data());
      p.layout = TensorLayout::kNHWC;
      auto b = ops::make_max_pool2d(target(dtype), p);
      b->forward_training(xh.data(), yh.data());
      b->backward(dyh.data(), dxh.data());
      p.layout = TensorLayout::kNCHW;
      gpu_test::expect_close(host_floats(y), nchw_floats(yh), {0, 0}, "max y");
      gpu_test::expect_close(host_floats(dx), nchw_floats(dxh), {0, 0}, "max dx");
    }
    for (const bool include_pad : {true, false}) {
      NDArray y = like(dy), dx = like(x), yh = like(dyh), dxh = like(xh);
      auto a = ops::make_avg_pool2d(target(dtype), p, include_pad);
      a->forward(x.data(), y.data());
      a->backward(dy.data(), dx.data());
      p.layout = TensorLayout::kNHWC;
      auto b = ops::make_avg_pool2d(target(dtype), p, include_pad);
      b->forward(xh.data(), yh.data());
      b->backward(dyh.data(), dxh.data());
      p.layout = TensorLayout::kNCHW;
      // The same sums in the same order: only the addresses differ.
      gpu_test::expect_close(host_floats(y), nchw_floats(yh), {0, 0}, "avg y");
      gpu_test::expect_close(host_floats(dx), nchw_floats(dxh), {0, 0}, "avg dx");
    }
    {
      NDArray y = NDArray::empty(gpu_, dtype, core::Shape({p.N, p.C})), yh = like(y);
      const NDArray gdy = random(y.shape(), 22, dtype);
      NDArray dx = like(x), dxh = like(xh);
      auto a = ops::make_global_avg_pool2d(target(dtype), p.N, p.C, p.H, p.W, TensorLayout::kNCHW);
      auto b = ops::make_global_avg_pool2d(target(dtype), p.N, p.C, p.H, p.W, TensorLayout::kNHWC);
      a->forward(x.data(), y.data());
      a->backward(gdy.data(), dx.data());
      b->forward(xh.data(), yh.data());
      b->backward(gdy.data(), dxh.data());
      gpu_test::expect_close(host_floats(y), host_floats(yh), {0, 0}, "global y");
      gpu_test::expect_close(host_floats(dx), nchw_floats(dxh), {0, 0}, "global dx");
    }
  }
}

}  // namespace
}  // namespace dt
