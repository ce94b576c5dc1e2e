// Times forward and backward of the CPU kernels at the shapes of LeNet
// (batch 64, MNIST) and ResNet-18 for CIFAR (batch 32), plus the whole
// LeNet forward+backward. One JSON line per
// measurement, median of the timed runs after warm-up.
//
// usage: kernel_bench [threads (0 = OMP_NUM_THREADS / CPUs)] [runs]

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "ops/cpu/batch_norm.h"
#include "ops/cpu/conv2d.h"
#include "ops/cpu/cpu_engine.h"
#include "ops/cpu/eltwise.h"
#include "ops/cpu/inner_product.h"
#include "ops/cpu/pooling.h"
#include "ops/cpu/softmax_cross_entropy.h"

namespace {

using namespace dt::ops::cpu;
using dt::ops::Activation;
using dt::ops::BatchNormParams;
using dt::ops::Conv2DParams;
using dt::ops::InnerProductParams;
using dt::ops::Pool2DParams;

int g_runs = 30;
constexpr int kWarmup = 3;

std::vector<float> filled(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& e : v) e = dist(gen);
  return v;
}

double median_ms(const std::function<void()>& fn) {
  for (int i = 0; i < kWarmup; ++i) fn();
  std::vector<double> ms(g_runs);
  for (auto& m : ms) {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    m = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  }
  std::nth_element(ms.begin(), ms.begin() + ms.size() / 2, ms.end());
  return ms[ms.size() / 2];
}

void report(const char* kernel, const std::string& shape, double fwd, double bwd, int threads) {
  std::printf(
      "{\"kernel\":\"%s\",\"shape\":\"%s\",\"fwd_ms\":%.4f,\"bwd_ms\":%.4f,\"threads\":%d}\n",
      kernel, shape.c_str(), fwd, bwd, threads);
  std::fflush(stdout);
}

// bwd_ms covers backward_data and backward_weights, as one training step runs
// both (except for a network's first layer).
void bench_conv(const CpuEngine& engine, const Conv2DParams& p) {
  Conv2D conv(engine, p);
  auto x = filled(p.N * p.C * p.H * p.W, 1);
  auto w = filled(p.K * (p.C / p.groups) * p.R * p.S, 2);
  auto b = filled(p.K, 3);
  const size_t ysize = p.N * p.K * p.out_h() * p.out_w();
  auto y = filled(ysize, 4), dy = filled(ysize, 5);
  std::vector<float> dx(x.size()), dw(w.size()), db(b.size());
  const double fwd = median_ms([&] { conv.forward(x.data(), w.data(), b.data(), y.data()); });
  const double bwd = median_ms([&] {
    conv.backward_data(dy.data(), w.data(), dx.data());
    conv.backward_weights(x.data(), dy.data(), dw.data(), db.data());
  });
  const std::string shape = "N" + std::to_string(p.N) + "_C" + std::to_string(p.C) + "_" +
                            std::to_string(p.H) + "x" + std::to_string(p.W) + "_K" +
                            std::to_string(p.K) + "_" + std::to_string(p.R) + "x" +
                            std::to_string(p.S) + "_s" + std::to_string(p.stride_h) + "_p" +
                            std::to_string(p.pad_h);
  report("conv2d", shape, fwd, bwd, engine.num_threads());
}

std::string nchw(int64_t N, int64_t C, int64_t H, int64_t W) {
  return "N" + std::to_string(N) + "_C" + std::to_string(C) + "_" + std::to_string(H) + "x" +
         std::to_string(W);
}

void bench_maxpool(const CpuEngine& engine, const Pool2DParams& p) {
  MaxPool2D pool(engine, p);
  auto x = filled(p.N * p.C * p.H * p.W, 6);
  auto y = filled(p.N * p.C * p.out_h() * p.out_w(), 7), dy = y;
  std::vector<float> dx(x.size());
  const double fwd = median_ms([&] { pool.forward_training(x.data(), y.data()); });
  const double bwd = median_ms([&] { pool.backward(dy.data(), dx.data()); });
  report("maxpool2d", nchw(p.N, p.C, p.H, p.W) + "_k" + std::to_string(p.kernel_h), fwd, bwd,
         engine.num_threads());
}

void bench_dense(const CpuEngine& engine, const InnerProductParams& p) {
  InnerProduct ip(engine, p);
  auto x = filled(p.N * p.in, 8), w = filled(p.out * p.in, 9), b = filled(p.out, 10);
  auto y = filled(p.N * p.out, 11), dy = y;
  std::vector<float> dx(x.size()), dw(w.size()), db(b.size());
  const double fwd = median_ms([&] { ip.forward(x.data(), w.data(), b.data(), y.data()); });
  const double bwd = median_ms([&] {
    ip.backward_data(dy.data(), w.data(), dx.data());
    ip.backward_weights(x.data(), dy.data(), dw.data(), db.data());
  });
  report("inner_product",
         "N" + std::to_string(p.N) + "_in" + std::to_string(p.in) + "_out" + std::to_string(p.out),
         fwd, bwd, engine.num_threads());
}

void bench_eltwise(const CpuEngine& engine, Activation kind, const char* name, int64_t count) {
  Eltwise op(engine, kind, count);
  auto x = filled(count, 12), y = x, dy = x, dx = x;
  const double fwd = median_ms([&] { op.forward(x.data(), y.data()); });
  const double bwd = median_ms([&] { op.backward(y.data(), dy.data(), dx.data()); });
  report(name, "count" + std::to_string(count), fwd, bwd, engine.num_threads());
}

void bench_batch_norm(const CpuEngine& engine, const BatchNormParams& p) {
  BatchNorm bn(engine, p);
  const size_t n = p.N * p.C * p.H * p.W;
  auto x = filled(n, 13), y = x, dy = x, dx = x;
  auto gamma = filled(p.C, 14), beta = filled(p.C, 15), mean = gamma, var = gamma;
  std::vector<float> rmean(p.C, 0.0f), rvar(p.C, 1.0f), dgamma(p.C), dbeta(p.C);
  const double fwd = median_ms([&] {
    bn.forward_training(x.data(), gamma.data(), beta.data(), y.data(), mean.data(), var.data(),
                        rmean.data(), rvar.data());
  });
  const double bwd = median_ms([&] {
    bn.backward(x.data(), dy.data(), gamma.data(), mean.data(), var.data(), dx.data(),
                dgamma.data(), dbeta.data());
  });
  report("batch_norm", nchw(p.N, p.C, p.H, p.W), fwd, bwd, engine.num_threads());
}

void bench_softmax_ce(const CpuEngine& engine, int64_t N, int64_t classes) {
  SoftmaxCrossEntropy ce(N, classes);
  auto logits = filled(N * classes, 16), dlogits = logits;
  std::vector<int32_t> labels(N);
  for (int64_t i = 0; i < N; ++i) labels[i] = static_cast<int32_t>(i % classes);
  const double fwd = median_ms([&] { ce.forward(logits.data(), labels.data()); });
  const double bwd = median_ms([&] { ce.backward(dlogits.data()); });
  report("softmax_cross_entropy", "N" + std::to_string(N) + "_classes" + std::to_string(classes),
         fwd, bwd, engine.num_threads());
}

// The whole LeNet forward and backward (no optimizer) as the layers will
// chain the kernels, to compare with one training step of a framework.
void bench_lenet_step(const CpuEngine& engine) {
  const int64_t N = 64;
  auto c1p = Conv2DParams{};
  c1p.N = N, c1p.C = 1, c1p.H = c1p.W = 28, c1p.K = 20, c1p.R = c1p.S = 5;
  auto c2p = Conv2DParams{};
  c2p.N = N, c2p.C = 20, c2p.H = c2p.W = 12, c2p.K = 50, c2p.R = c2p.S = 5;
  Pool2DParams p1p{N, 20, 24, 24}, p2p{N, 50, 8, 8};
  Conv2D c1(engine, c1p), c2(engine, c2p);
  MaxPool2D p1(engine, p1p), p2(engine, p2p);
  InnerProduct d1(engine, {N, 800, 500, true}), d2(engine, {N, 500, 10, true});
  Eltwise relu(engine, Activation::kRelu, N * 500);
  SoftmaxCrossEntropy loss(N, 10);

  auto x = filled(N * 784, 17);
  auto w1 = filled(20 * 25, 18), b1 = filled(20, 19), w2 = filled(50 * 20 * 25, 20),
       b2 = filled(50, 21), w3 = filled(500 * 800, 22), b3 = filled(500, 23),
       w4 = filled(10 * 500, 24), b4 = filled(10, 25);
  for (auto* v : {&w1, &w2, &w3, &w4})
    for (auto& e : *v) e *= 0.05f;
  std::vector<int32_t> labels(N);
  for (int64_t i = 0; i < N; ++i) labels[i] = static_cast<int32_t>(i % 10);
  std::vector<float> a1(N * 20 * 576), a2(N * 20 * 144), a3(N * 50 * 64), a4(N * 800),
      a5(N * 500), a6(N * 500), a7(N * 10);
  std::vector<float> g1(a1.size()), g2(a2.size()), g3(a3.size()), g4(a4.size()), g5(a5.size()),
      g7(a7.size());
  std::vector<float> gw1(w1.size()), gb1(b1.size()), gw2(w2.size()), gb2(b2.size()),
      gw3(w3.size()), gb3(b3.size()), gw4(w4.size()), gb4(b4.size());

  auto forward = [&] {
    c1.forward(x.data(), w1.data(), b1.data(), a1.data());
    p1.forward_training(a1.data(), a2.data());
    c2.forward(a2.data(), w2.data(), b2.data(), a3.data());
    p2.forward_training(a3.data(), a4.data());
    d1.forward(a4.data(), w3.data(), b3.data(), a5.data());
    relu.forward(a5.data(), a6.data());
    d2.forward(a6.data(), w4.data(), b4.data(), a7.data());
    loss.forward(a7.data(), labels.data());
  };
  auto backward = [&] {
    loss.backward(g7.data());
    d2.backward_weights(a6.data(), g7.data(), gw4.data(), gb4.data());
    d2.backward_data(g7.data(), w4.data(), g5.data());
    relu.backward(a6.data(), g5.data(), g5.data());
    d1.backward_weights(a4.data(), g5.data(), gw3.data(), gb3.data());
    d1.backward_data(g5.data(), w3.data(), g4.data());
    p2.backward(g4.data(), g3.data());
    c2.backward_weights(a2.data(), g3.data(), gw2.data(), gb2.data());
    c2.backward_data(g3.data(), w2.data(), g2.data());
    p1.backward(g2.data(), g1.data());
    c1.backward_weights(x.data(), g1.data(), gw1.data(), gb1.data());
  };
  const double fwd = median_ms(forward);
  const double bwd = median_ms([&] {
    forward();
    backward();
  });
  report("lenet_step", "N64_1x28x28", fwd, bwd - fwd, engine.num_threads());
}

Conv2DParams conv_params(int64_t N, int64_t C, int64_t H, int64_t K, int64_t R, int64_t stride,
                         int64_t pad) {
  Conv2DParams p;
  p.N = N, p.C = C, p.H = H, p.W = H, p.K = K, p.R = R, p.S = R;
  p.stride_h = p.stride_w = stride;
  p.pad_h = p.pad_w = pad;
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 0;
  if (argc > 2) g_runs = std::max(1, std::atoi(argv[2]));
  CpuEngine engine(threads);

  // LeNet, batch 64.
  bench_conv(engine, conv_params(64, 1, 28, 20, 5, 1, 0));
  bench_maxpool(engine, Pool2DParams{64, 20, 24, 24});
  bench_conv(engine, conv_params(64, 20, 12, 50, 5, 1, 0));
  bench_maxpool(engine, Pool2DParams{64, 50, 8, 8});
  bench_dense(engine, InnerProductParams{64, 800, 500, true});
  bench_eltwise(engine, Activation::kRelu, "relu", 64 * 500);
  bench_dense(engine, InnerProductParams{64, 500, 10, true});
  bench_softmax_ce(engine, 64, 10);
  bench_lenet_step(engine);

  // ResNet-18 CIFAR, batch 32: stem and the 3x3 convolutions of each stage.
  bench_conv(engine, conv_params(32, 3, 32, 64, 3, 1, 1));
  bench_conv(engine, conv_params(32, 64, 32, 64, 3, 1, 1));
  bench_conv(engine, conv_params(32, 128, 16, 128, 3, 1, 1));
  bench_conv(engine, conv_params(32, 256, 8, 256, 3, 1, 1));
  bench_conv(engine, conv_params(32, 512, 4, 512, 3, 1, 1));
  bench_conv(engine, conv_params(32, 64, 32, 128, 3, 2, 1));
  bench_batch_norm(engine, BatchNormParams{32, 64, 32, 32});
  bench_batch_norm(engine, BatchNormParams{32, 512, 4, 4});
  bench_eltwise(engine, Activation::kRelu, "relu", 32 * 64 * 32 * 32);
  return 0;
}
