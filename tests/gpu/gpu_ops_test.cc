// The GPU layer ops (src/ops/cuda) against the CPU ops (src/ops/cpu) on the
// same random inputs, and a LeNet trained through the layers on both devices.
// Without a visible device the program reports a skip (exit code 77, CTest's
// SKIP_RETURN_CODE).
//
// Tolerances, |gpu - cpu| <= abs + rel * |cpu| per element, float32 on both
// sides (cuDNN with FMA math, cuBLAS with default math: no TF32):
//   exact (0, 0)          max pooling forward, relu, flatten
//   rel 1e-5, abs 1e-6    average/global pooling, max pooling backward
//                         (sums of overlapping windows), sigmoid,
//                         tanh, softmax probabilities and gradients, the loss
//   rel 1e-4, abs 1e-4    conv and dense outputs and input gradients (sums of
//                         up to a few hundred products of O(1) values, in a
//                         different order and, for cuDNN, possibly by
//                         Winograd/FFT), batch norm outputs, statistics and dx
//   rel 1e-3, abs 1e-3    weight, bias, gamma and beta gradients (sums over
//                         the whole batch: thousands of terms)
// LeNet: after the same 300 SGD steps from the same weights on the same
// Fashion-MNIST batches, the GPU run's test accuracy is within 2 points of
// the CPU run's, and the CPU run's is above 70% (so neither can pass by
// learning nothing).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "core/context.h"
#include "core/copy.h"
#include "core/cuda/gpu_context.h"
#include "core/error.h"
#include "core/ndarray.h"
#include "data/mnist_dataset.h"
#include "nn/layer.h"
#include "nn/layers/softmax_cross_entropy_loss.h"
#include "ops/cpu/batch_norm.h"
#include "ops/cpu/conv2d.h"
#include "ops/cpu/cpu_engine.h"
#include "ops/cpu/eltwise.h"
#include "ops/cpu/inner_product.h"
#include "ops/cpu/pooling.h"
#include "ops/cpu/softmax_cross_entropy.h"
#include "ops/cuda/batch_norm.h"
#include "ops/cuda/eltwise.h"
#include "ops/cuda/inner_product.h"
#include "ops/cuda/pooling.h"
#include "ops/cuda/softmax_cross_entropy.h"
#include "ops/tensor_math.h"
#include "unit/ops/ops_test_util.h"
#if DT_WITH_CUDNN
#include "ops/cuda/conv2d.h"
#endif

namespace dt {
namespace {

using core::DType;
using core::NDArray;
using core::Shape;

struct Tolerance {
  double rel;
  double abs;
};
constexpr Tolerance kExact{0.0, 0.0};
constexpr Tolerance kElementwise{1e-5, 1e-6};
constexpr Tolerance kSums{1e-4, 1e-4};
constexpr Tolerance kBatchSums{1e-3, 1e-3};

std::vector<float> random_vector(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen);
  return v;
}

void expect_close(const std::vector<float>& gpu, const std::vector<float>& cpu, Tolerance tol,
                  const std::string& what) {
  ASSERT_EQ(gpu.size(), cpu.size()) << what;
  size_t bad = 0;
  for (size_t i = 0; i < cpu.size(); ++i) {
    const double diff = std::fabs(static_cast<double>(gpu[i]) - static_cast<double>(cpu[i]));
    if (diff <= tol.abs + tol.rel * std::fabs(static_cast<double>(cpu[i]))) continue;
    if (++bad <= 5) {
      ADD_FAILURE() << what << "[" << i << "]: gpu " << gpu[i] << ", cpu " << cpu[i] << " (rel " << tol.rel
                    << ", abs " << tol.abs << ")";
    }
  }
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << cpu.size() << " elements outside the tolerance";
}

class GpuOps : public ::testing::Test {
 protected:
  GpuOps() : engine_(2), gpu_(core::cuda::make_gpu_context(0)) {}

  // Device copies of host vectors, kept alive by the fixture.
  const float* upload(const std::vector<float>& v) {
    NDArray a = NDArray::empty(gpu_, DType::kFloat32, Shape({static_cast<int64_t>(v.size())}));
    a.copy_from_host(v.data(), v.size() * sizeof(float));
    arrays_.push_back(a);
    return a.data_as<float>();
  }
  float* device(size_t n) {
    NDArray a = NDArray::zeros(gpu_, DType::kFloat32, Shape({static_cast<int64_t>(n)}));
    arrays_.push_back(a);
    return a.data_as<float>();
  }
  std::vector<float> download(const float* ptr, size_t n) {
    std::vector<float> v(n);
    gpu_->synchronize();
    for (const NDArray& a : arrays_) {
      if (a.data_as<float>() == ptr) {
        a.copy_to_host(v.data(), n * sizeof(float));
        return v;
      }
    }
    ADD_FAILURE() << "download of a pointer the fixture does not own";
    return v;
  }

  // Training forward, backward and inference forward of one shape, beside
  // the CPU kernel's.
  void expect_batch_norm_matches_cpu(int64_t N, int64_t C, int64_t H, int64_t W);

#if DT_WITH_CUDNN
  void check_conv(const ops::Conv2DParams& p, uint32_t seed) {
    const ops::cpu::testing::ConvInputs in = ops::cpu::testing::conv_inputs(p, seed);
    const size_t nx = in.nx, nw = in.nw, ny = in.ny, nb = in.nb;
    const std::vector<float>&x = in.x, &w = in.w, &b = in.b, &dy = in.dy;
    ops::cpu::Conv2D cpu(engine_, p);
    std::vector<float> y(ny), dx(nx), dw(nw), db(nb);
    cpu.forward(x.data(), w.data(), b.data(), y.data());
    cpu.backward_data(dy.data(), w.data(), dx.data());
    cpu.backward_weights(x.data(), dy.data(), dw.data(), db.data());

    ops::cuda::Conv2D gpu(gpu_, p);
    const float *gx = upload(x), *gw = upload(w), *gb = upload(b), *gdy = upload(dy);
    float *gy = device(ny), *gdx = device(nx), *gdw = device(nw), *gdb = device(nb);
    gpu.forward(gx, gw, gb, gy);
    gpu.backward_data(gdy, gw, gdx);
    gpu.backward_weights(gx, gdy, gdw, gdb);
    expect_close(download(gy, ny), y, kSums, "conv y");
    expect_close(download(gdx, nx), dx, kSums, "conv dx");
    expect_close(download(gdw, nw), dw, kBatchSums, "conv dw");
    if (p.has_bias) expect_close(download(gdb, nb), db, kBatchSums, "conv db");
  }
#endif

  ops::cpu::CpuEngine engine_;
  std::shared_ptr<core::Context> gpu_;
  std::vector<NDArray> arrays_;
};

#if DT_WITH_CUDNN
TEST_F(GpuOps, Conv2DMatchesCpu) {
  struct Case {
    const char* name;
    ops::Conv2DParams p;
  };
  std::vector<Case> cases;
  {
    ops::Conv2DParams p;  // LeNet's first layer
    p.N = 8, p.C = 1, p.H = 28, p.W = 28, p.K = 6, p.R = 5, p.S = 5, p.pad_h = 2, p.pad_w = 2;
    cases.push_back({"lenet_conv1", p});
  }
  {
    ops::Conv2DParams p;  // strided, padded, dilated, non-square
    p.N = 4, p.C = 6, p.H = 13, p.W = 11, p.K = 8, p.R = 3, p.S = 3, p.stride_h = 2, p.stride_w = 2;
    p.pad_h = 1, p.pad_w = 1, p.dilation_h = 2, p.dilation_w = 2;
    cases.push_back({"strided_dilated", p});
  }
  {
    ops::Conv2DParams p;  // grouped, without bias
    p.N = 2, p.C = 8, p.H = 9, p.W = 9, p.K = 12, p.R = 3, p.S = 3, p.pad_h = 1, p.pad_w = 1, p.groups = 4;
    p.has_bias = false;
    cases.push_back({"grouped_no_bias", p});
  }
  uint32_t seed = 100;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    check_conv(c.p, seed += 10);
  }
}
#endif

TEST_F(GpuOps, InnerProductMatchesCpu) {
  for (bool bias : {true, false}) {
    ops::InnerProductParams p;
    p.N = 16, p.in = 400, p.out = 120, p.has_bias = bias;
    const size_t nx = 16 * 400, nw = 120 * 400, ny = 16 * 120;
    const std::vector<float> x = random_vector(nx, 1), w = random_vector(nw, 2, -0.1f, 0.1f),
                             b = random_vector(120, 3), dy = random_vector(ny, 4);
    ops::cpu::InnerProduct cpu(engine_, p);
    std::vector<float> y(ny), dx(nx), dw(nw), db(120);
    cpu.forward(x.data(), w.data(), b.data(), y.data());
    cpu.backward_data(dy.data(), w.data(), dx.data());
    cpu.backward_weights(x.data(), dy.data(), dw.data(), db.data());

    ops::cuda::InnerProduct gpu(gpu_, p);
    const float *gx = upload(x), *gw = upload(w), *gb = upload(b), *gdy = upload(dy);
    float *gy = device(ny), *gdx = device(nx), *gdw = device(nw), *gdb = device(120);
    gpu.forward(gx, gw, gb, gy);
    gpu.backward_data(gdy, gw, gdx);
    gpu.backward_weights(gx, gdy, gdw, gdb);
    SCOPED_TRACE(bias ? "with bias" : "without bias");
    expect_close(download(gy, ny), y, kSums, "dense y");
    expect_close(download(gdx, nx), dx, kSums, "dense dx");
    expect_close(download(gdw, nw), dw, kBatchSums, "dense dw");
    if (bias) expect_close(download(gdb, 120), db, kBatchSums, "dense db");
  }
}

std::vector<ops::Pool2DParams> pool_cases() {
  std::vector<ops::Pool2DParams> cases;
  ops::Pool2DParams p;
  p.N = 4, p.C = 6, p.H = 28, p.W = 28;  // LeNet's 2x2, stride 2
  cases.push_back(p);
  p.H = 15, p.W = 13, p.kernel_h = 3, p.kernel_w = 3, p.stride_h = 2, p.stride_w = 2, p.pad_h = 1, p.pad_w = 1;
  cases.push_back(p);  // overlapping windows with padding (ResNet's stem)
  return cases;
}

TEST_F(GpuOps, MaxPoolMatchesCpu) {
  for (const ops::Pool2DParams& p : pool_cases()) {
    const size_t nx = static_cast<size_t>(p.N * p.C * p.H * p.W), ny = static_cast<size_t>(p.N * p.C * p.out_h() * p.out_w());
    const std::vector<float> x = random_vector(nx, 5), dy = random_vector(ny, 6);
    ops::cpu::MaxPool2D cpu(engine_, p);
    std::vector<float> y(ny), y_inf(ny), dx(nx);
    cpu.forward_training(x.data(), y.data());
    cpu.backward(dy.data(), dx.data());
    cpu.forward_inference(x.data(), y_inf.data());

    ops::cuda::MaxPool2D gpu(gpu_, p);
    EXPECT_THROW(gpu.backward(upload(dy), device(nx)), std::logic_error);
    const float *gx = upload(x), *gdy = upload(dy);
    float *gy = device(ny), *gy_inf = device(ny), *gdx = device(nx);
    gpu.forward_training(gx, gy);
    gpu.backward(gdy, gdx);
    gpu.forward_inference(gx, gy_inf);
    SCOPED_TRACE("kernel " + std::to_string(p.kernel_h) + ", pad " + std::to_string(p.pad_h));
    expect_close(download(gy, ny), y, kExact, "maxpool y");
    expect_close(download(gy_inf, ny), y_inf, kExact, "maxpool y (inference)");
    expect_close(download(gdx, nx), dx, kElementwise, "maxpool dx");
  }
}

TEST_F(GpuOps, MaxPoolNanWinsAsOnCpu) {
  ops::Pool2DParams p;
  p.N = 1, p.C = 1, p.H = 4, p.W = 4;
  std::vector<float> x = random_vector(16, 7);
  x[5] = std::nanf("");
  ops::cpu::MaxPool2D cpu(engine_, p);
  std::vector<float> y(4);
  cpu.forward_training(x.data(), y.data());
  ops::cuda::MaxPool2D gpu(gpu_, p);
  float* gy = device(4);
  gpu.forward_training(upload(x), gy);
  const std::vector<float> got = download(gy, 4);
  EXPECT_TRUE(std::isnan(got[0]) && std::isnan(y[0]));
  expect_close({got.begin() + 1, got.end()}, {y.begin() + 1, y.end()}, kExact, "maxpool y beside NaN");
}

TEST_F(GpuOps, AvgPoolMatchesCpu) {
  for (const ops::Pool2DParams& p : pool_cases()) {
    for (bool include_pad : {true, false}) {
      const size_t nx = static_cast<size_t>(p.N * p.C * p.H * p.W), ny = static_cast<size_t>(p.N * p.C * p.out_h() * p.out_w());
      const std::vector<float> x = random_vector(nx, 8), dy = random_vector(ny, 9);
      ops::cpu::AvgPool2D cpu(engine_, p, include_pad);
      std::vector<float> y(ny), dx(nx);
      cpu.forward(x.data(), y.data());
      cpu.backward(dy.data(), dx.data());
      ops::cuda::AvgPool2D gpu(gpu_, p, include_pad);
      float *gy = device(ny), *gdx = device(nx);
      gpu.forward(upload(x), gy);
      gpu.backward(upload(dy), gdx);
      SCOPED_TRACE(std::string("count_include_pad ") + (include_pad ? "true" : "false") + ", pad " +
                   std::to_string(p.pad_h));
      expect_close(download(gy, ny), y, kElementwise, "avgpool y");
      expect_close(download(gdx, nx), dx, kElementwise, "avgpool dx");
    }
  }
}

TEST_F(GpuOps, GlobalAvgPoolMatchesCpu) {
  const int64_t N = 4, C = 32, H = 7, W = 7;
  const size_t nx = N * C * H * W, ny = N * C;
  const std::vector<float> x = random_vector(nx, 10), dy = random_vector(ny, 11);
  ops::cpu::GlobalAvgPool2D cpu(engine_, N, C, H, W);
  std::vector<float> y(ny), dx(nx);
  cpu.forward(x.data(), y.data());
  cpu.backward(dy.data(), dx.data());
  ops::cuda::GlobalAvgPool2D gpu(gpu_, N, C, H, W);
  float *gy = device(ny), *gdx = device(nx);
  gpu.forward(upload(x), gy);
  gpu.backward(upload(dy), gdx);
  expect_close(download(gy, ny), y, kElementwise, "global avgpool y");
  expect_close(download(gdx, nx), dx, kElementwise, "global avgpool dx");
}

// Shapes whose per-channel sums run in one block per channel, and in
// several splits of the samples each (kernels::batch_norm_splits), evenly
// and not.
TEST_F(GpuOps, BatchNormMatchesCpu) {
  const struct {
    int64_t N, C, H, W;
  } shapes[] = {{8, 16, 10, 10}, {64, 8, 16, 16}, {96, 3, 24, 24}, {32, 64, 2, 3}};
  for (const auto& shape : shapes) {
    SCOPED_TRACE("N " + std::to_string(shape.N) + " C " + std::to_string(shape.C) + " H " + std::to_string(shape.H) +
                 " W " + std::to_string(shape.W));
    expect_batch_norm_matches_cpu(shape.N, shape.C, shape.H, shape.W);
  }
}

void GpuOps::expect_batch_norm_matches_cpu(int64_t N, int64_t C, int64_t H, int64_t W) {
  ops::BatchNormParams p;
  p.N = N, p.C = C, p.H = H, p.W = W, p.eps = 1e-5f, p.momentum = 0.1f;
  const size_t nx = static_cast<size_t>(p.N * p.C * p.H * p.W), nc = static_cast<size_t>(C);
  // Offset inputs: the statistics must not rely on a mean near zero.
  const std::vector<float> x = random_vector(nx, 12, 2.0f, 5.0f), dy = random_vector(nx, 13),
                           gamma = random_vector(nc, 14, 0.5f, 1.5f), beta = random_vector(nc, 15);
  std::vector<float> running_mean = random_vector(nc, 16), running_var = random_vector(nc, 17, 0.5f, 2.0f);
  const std::vector<float> running_mean0 = running_mean, running_var0 = running_var;

  ops::cpu::BatchNorm cpu(engine_, p);
  std::vector<float> y(nx), mean(nc), var(nc), dx(nx), dgamma(nc), dbeta(nc), y_inf(nx);
  cpu.forward_training(x.data(), gamma.data(), beta.data(), y.data(), mean.data(), var.data(), running_mean.data(),
                       running_var.data());
  cpu.backward(x.data(), dy.data(), gamma.data(), mean.data(), var.data(), dx.data(), dgamma.data(), dbeta.data());
  cpu.forward_inference(x.data(), gamma.data(), beta.data(), running_mean.data(), running_var.data(), y_inf.data());

  ops::cuda::BatchNorm gpu(gpu_, p);
  const float *gx = upload(x), *gdy = upload(dy), *ggamma = upload(gamma), *gbeta = upload(beta);
  float* grm = const_cast<float*>(upload(running_mean0));
  float* grv = const_cast<float*>(upload(running_var0));
  float *gy = device(nx), *gmean = device(nc), *gvar = device(nc), *gdx = device(nx), *gdgamma = device(nc),
        *gdbeta = device(nc), *gy_inf = device(nx);
  gpu.forward_training(gx, ggamma, gbeta, gy, gmean, gvar, grm, grv);
  gpu.backward(gx, gdy, ggamma, gmean, gvar, gdx, gdgamma, gdbeta);
  gpu.forward_inference(gx, ggamma, gbeta, grm, grv, gy_inf);

  expect_close(download(gy, nx), y, kSums, "bn y");
  expect_close(download(gmean, nc), mean, kSums, "bn saved_mean");
  expect_close(download(gvar, nc), var, kSums, "bn saved_var");
  expect_close(download(grm, nc), running_mean, kSums, "bn running_mean");
  expect_close(download(grv, nc), running_var, kSums, "bn running_var");
  expect_close(download(gdx, nx), dx, kSums, "bn dx");
  expect_close(download(gdgamma, nc), dgamma, kBatchSums, "bn dgamma");
  expect_close(download(gdbeta, nc), dbeta, kBatchSums, "bn dbeta");
  expect_close(download(gy_inf, nx), y_inf, kSums, "bn y (inference)");
}

TEST_F(GpuOps, ActivationsMatchCpu) {
  const struct {
    ops::Activation kind;
    const char* name;
    Tolerance tol;
  } kinds[] = {{ops::Activation::kRelu, "relu", kExact},
               {ops::Activation::kSigmoid, "sigmoid", kElementwise},
               {ops::Activation::kTanh, "tanh", kElementwise}};
  const size_t n = 10007;  // not a multiple of any block size
  const std::vector<float> x = random_vector(n, 18, -6.0f, 6.0f), dy = random_vector(n, 19);
  for (const auto& k : kinds) {
    SCOPED_TRACE(k.name);
    ops::cpu::Eltwise cpu(engine_, k.kind, static_cast<int64_t>(n));
    std::vector<float> y(n), dx(n);
    cpu.forward(x.data(), y.data());
    cpu.backward(y.data(), dy.data(), dx.data());
    ops::cuda::Eltwise gpu(gpu_, k.kind, static_cast<int64_t>(n));
    float *gy = device(n), *gdx = device(n);
    gpu.forward(upload(x), gy);
    // From the CPU's y, so that only the backward formula is compared here.
    gpu.backward(upload(y), upload(dy), gdx);
    expect_close(download(gy, n), y, k.tol, "y");
    expect_close(download(gdx, n), dx, k.tol, "dx");
  }
}

TEST_F(GpuOps, SoftmaxCrossEntropyMatchesCpu) {
  const int64_t N = 64, classes = 10;
  const std::vector<float> logits = random_vector(N * classes, 20, -8.0f, 8.0f);
  std::vector<int32_t> labels(N);
  for (int64_t i = 0; i < N; ++i) labels[i] = static_cast<int32_t>((i * 7) % classes);
  for (ops::Reduction reduction : {ops::Reduction::kMean, ops::Reduction::kSum}) {
    ops::cpu::SoftmaxCrossEntropy cpu(N, classes, reduction);
    const float loss = cpu.forward(logits.data(), labels.data());
    std::vector<float> dlogits(N * classes);
    cpu.backward(dlogits.data(), 0.5f);

    ops::cuda::SoftmaxCrossEntropy gpu(gpu_, N, classes, reduction);
    EXPECT_THROW(gpu.backward(device(N * classes)), std::logic_error);
    NDArray glabels = NDArray::empty(gpu_, DType::kInt32, Shape({N}));
    glabels.copy_from_host(labels.data(), labels.size() * sizeof(int32_t));
    const float gloss = gpu.forward(upload(logits), glabels.data_as<int32_t>());
    float* gd = device(N * classes);
    gpu.backward(gd, 0.5f);
    EXPECT_NEAR(gloss, loss, 1e-5 * std::fabs(loss) + 1e-6);
    expect_close(download(gd, N * classes), dlogits, kElementwise, "dlogits");
    std::vector<float> prob(N * classes);
    gpu_->synchronize();
    core::copy_to_host(prob.data(), *gpu_, gpu.probabilities(), prob.size() * sizeof(float));
    expect_close(prob, cpu.probabilities(), kElementwise, "probabilities");
  }
  // A bad label is an error naming it, as on the CPU.
  std::vector<int64_t> bad(N, 1);
  bad[17] = classes;
  NDArray gbad = NDArray::empty(gpu_, DType::kInt64, Shape({N}));
  gbad.copy_from_host(bad.data(), bad.size() * sizeof(int64_t));
  ops::cuda::SoftmaxCrossEntropy gpu(gpu_, N, classes);
  try {
    gpu.forward(upload(logits), gbad.data_as<int64_t>());
    ADD_FAILURE() << "label " << classes << " was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("row 17"), std::string::npos) << e.what();
  }
}

// ---- layers: dispatch to the GPU kernels, and LeNet on both devices ----------

// A chain of layers with its parameters, run through the Layer interface on
// one context: what Net does for a chain, without its graph machinery.
class Chain {
 public:
  Chain(std::shared_ptr<core::Context> ctx, const ops::cpu::CpuEngine& engine, const Shape& input)
      : ctx_(std::move(ctx)) {
    runtime_.engine = &engine;
    const std::vector<std::pair<std::string, nlohmann::json>> layers = {
        {"Conv2D", {{"channels", 6}, {"kernel_size", 5}, {"padding", 2}}},
        {"ReLU", nlohmann::json::object()},
        {"MaxPool2D", {{"pool_size", 2}}},
        {"Conv2D", {{"channels", 16}, {"kernel_size", 5}}},
        {"ReLU", nlohmann::json::object()},
        {"MaxPool2D", {{"pool_size", 2}}},
        {"Flatten", nlohmann::json::object()},
        {"Dense", {{"units", 120}}},
        {"ReLU", nlohmann::json::object()},
        {"Dense", {{"units", 84}}},
        {"ReLU", nlohmann::json::object()},
        {"Dense", {{"units", 10}}},
    };
    Shape shape = input;
    shapes_.push_back(shape);
    std::mt19937 gen(1234);
    for (size_t i = 0; i < layers.size(); ++i) {
      layers_.push_back(nn::create_layer(layers[i].first, "l" + std::to_string(i), layers[i].second));
      std::vector<nn::Parameter> params;
      for (const nn::ParamSpec& spec : layers_.back()->param_specs({shape})) {
        nn::Parameter p;
        p.name = "l" + std::to_string(i) + "." + spec.suffix;
        // Glorot-uniform weights, zero biases, from one seeded generator, so
        // that both devices start from the same bytes.
        std::vector<float> host(static_cast<size_t>(spec.shape.numel()), 0.0f);
        if (spec.suffix == "weight") {
          const double fan_out = static_cast<double>(spec.shape[0]);
          const double fan_in = static_cast<double>(spec.shape.numel()) / fan_out;
          const double fan_out_field = fan_out * (spec.shape.ndim() == 4 ? spec.shape[2] * spec.shape[3] : 1);
          const float a = static_cast<float>(std::sqrt(6.0 / (fan_in + fan_out_field)));
          std::uniform_real_distribution<float> dist(-a, a);
          for (float& v : host) v = dist(gen);
        }
        p.value = NDArray::empty(ctx_, DType::kFloat32, spec.shape);
        p.value.copy_from_host(host.data(), host.size() * sizeof(float));
        p.grad = NDArray::zeros(ctx_, DType::kFloat32, spec.shape);
        params.push_back(p);
      }
      params_.push_back(std::move(params));
      shape = layers_.back()->output_shape({shape});
      shapes_.push_back(shape);
    }
    for (const Shape& s : shapes_) {
      acts_.push_back(NDArray::empty(ctx_, DType::kFloat32, s));
      grads_.push_back(NDArray::empty(ctx_, DType::kFloat32, s));
    }
  }

  const NDArray& forward(const std::vector<float>& images, bool train) {
    acts_[0].copy_from_host(images.data(), images.size() * sizeof(float));
    ++runtime_.step;
    for (size_t i = 0; i < layers_.size(); ++i) {
      nn::ForwardArgs args;
      args.inputs = {&acts_[i]};
      args.params = param_ptrs(i);
      args.output = &acts_[i + 1];
      args.train = train;
      args.runtime = &runtime_;
      layers_[i]->forward(args);
    }
    return acts_.back();
  }

  double train_step(const std::vector<float>& images, const std::vector<int32_t>& labels, float lr) {
    forward(images, true);
    NDArray y = NDArray::empty(ctx_, DType::kInt32, Shape({static_cast<int64_t>(labels.size())}));
    y.copy_from_host(labels.data(), labels.size() * sizeof(int32_t));
    const double loss = loss_.forward_backward(acts_.back(), y, &grads_.back());
    for (size_t i = layers_.size(); i-- > 0;) {
      nn::BackwardArgs args;
      args.inputs = {&acts_[i]};
      args.output = &acts_[i + 1];
      args.output_grad = &grads_[i + 1];
      args.input_grads = {i == 0 ? nullptr : &grads_[i]};
      args.params = param_ptrs(i);
      args.runtime = &runtime_;
      layers_[i]->backward(args);
    }
    for (auto& layer_params : params_) {
      for (nn::Parameter& p : layer_params) ops::axpy(p.value, -lr, p.grad);
    }
    return loss;
  }

 private:
  std::vector<nn::Parameter*> param_ptrs(size_t layer) {
    std::vector<nn::Parameter*> out;
    for (nn::Parameter& p : params_[layer]) out.push_back(&p);
    return out;
  }

  std::shared_ptr<core::Context> ctx_;
  nn::LayerRuntime runtime_;
  std::vector<std::unique_ptr<nn::Layer>> layers_;
  std::vector<std::vector<nn::Parameter>> params_;
  std::vector<Shape> shapes_;
  std::vector<NDArray> acts_, grads_;
  nn::layers::SoftmaxCrossEntropyLoss loss_;
};

constexpr const char* kFashionMnist = "/usr/share/datasets/fashion-mnist";

// Images as (x / 255 - mean) / std floats, in the order of `indices`.
std::vector<float> images_of(const data::MnistDataset& set, const std::vector<int64_t>& indices) {
  const uint8_t* pixels = set.images().data_as<uint8_t>();
  std::vector<float> out;
  out.reserve(indices.size() * 784);
  for (int64_t i : indices) {
    for (int64_t j = 0; j < 784; ++j) out.push_back((pixels[i * 784 + j] / 255.0f - 0.2860f) / 0.3530f);
  }
  return out;
}

std::vector<int32_t> labels_of(const data::MnistDataset& set, const std::vector<int64_t>& indices) {
  const int32_t* labels = set.labels().data_as<int32_t>();
  std::vector<int32_t> out;
  for (int64_t i : indices) out.push_back(labels[i]);
  return out;
}

double train_and_evaluate(const std::shared_ptr<core::Context>& ctx, const ops::cpu::CpuEngine& engine,
                          const data::MnistDataset& train, const data::MnistDataset& test) {
  constexpr int64_t kBatch = 64, kSteps = 300, kTestBatches = 16;
  constexpr float kLearningRate = 0.05f;
  Chain chain(ctx, engine, Shape({kBatch, 1, 28, 28}));
  std::vector<int64_t> order(static_cast<size_t>(train.size()));
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937(42));
  for (int64_t step = 0; step < kSteps; ++step) {
    const std::vector<int64_t> idx(order.begin() + step * kBatch, order.begin() + (step + 1) * kBatch);
    const double loss = chain.train_step(images_of(train, idx), labels_of(train, idx), kLearningRate);
    if (!std::isfinite(loss)) {
      ADD_FAILURE() << ctx->to_string() << ": loss " << loss << " at step " << step;
      return 0.0;
    }
  }
  int64_t correct = 0;
  for (int64_t b = 0; b < kTestBatches; ++b) {
    std::vector<int64_t> idx(kBatch);
    std::iota(idx.begin(), idx.end(), b * kBatch);
    const NDArray& logits = chain.forward(images_of(test, idx), false);
    std::vector<float> host(static_cast<size_t>(kBatch * 10));
    logits.copy_to_host(host.data(), host.size() * sizeof(float));
    const std::vector<int32_t> labels = labels_of(test, idx);
    for (int64_t i = 0; i < kBatch; ++i) {
      const auto row = host.begin() + i * 10;
      if (std::max_element(row, row + 10) - row == labels[static_cast<size_t>(i)]) ++correct;
    }
  }
  return static_cast<double>(correct) / static_cast<double>(kTestBatches * kBatch);
}

// LeNet needs Conv2D, whose GPU kernel is cuDNN's: without cuDNN the test
// is not built (Conv2D on a GPU is NOT_SUPPORTED in such a build).
#if DT_WITH_CUDNN
TEST_F(GpuOps, LeNetOnGpuReachesCpuAccuracy) {
  std::unique_ptr<data::MnistDataset> train, test;
  try {
    train = std::make_unique<data::MnistDataset>(
        data::MnistDataset::from_directory(kFashionMnist, data::MnistSplit::kTrain));
    test = std::make_unique<data::MnistDataset>(
        data::MnistDataset::from_directory(kFashionMnist, data::MnistSplit::kTest));
  } catch (const core::Error& e) {
    FAIL() << "Fashion-MNIST is missing (scripts/install-deps.sh installs dataset-fashion-mnist): " << e.what();
  }
  const double cpu_accuracy = train_and_evaluate(core::make_cpu_context(), engine_, *train, *test);
  const double gpu_accuracy = train_and_evaluate(gpu_, engine_, *train, *test);
  std::printf("LeNet, 300 steps of 64: test accuracy cpu %.4f, gpu %.4f\n", cpu_accuracy, gpu_accuracy);
  EXPECT_GT(cpu_accuracy, 0.70);
  EXPECT_GE(gpu_accuracy, cpu_accuracy - 0.02);
}
#endif  // DT_WITH_CUDNN

TEST_F(GpuOps, LayersRejectMixedDevices) {
  const Shape shape({2, 3, 4, 4});
  NDArray x = NDArray::zeros(gpu_, DType::kFloat32, shape);
  NDArray cpu_out = NDArray::zeros(core::make_cpu_context(), DType::kFloat32, shape);
  nn::LayerRuntime runtime;
  runtime.engine = &engine_;

  auto relu = nn::create_layer("ReLU", "relu", nlohmann::json::object());
  nn::ForwardArgs args;
  args.inputs = {&x};
  args.output = &cpu_out;
  args.runtime = &runtime;
  try {
    relu->forward(args);
    ADD_FAILURE() << "a CPU output for a GPU input was accepted";
  } catch (const core::Error& e) {
    EXPECT_EQ(e.code(), core::ErrorCode::kInvalidArgument) << e.what();
  }
}

}  // namespace
}  // namespace dt
