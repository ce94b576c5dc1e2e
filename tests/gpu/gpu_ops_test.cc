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
// The layers and LeNet on both devices: gpu_ops/layers.cc.
#include "gpu_ops/gpu_ops_test_util.h"

namespace dt::gpu_ops_test {

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

}  // namespace dt::gpu_ops_test
