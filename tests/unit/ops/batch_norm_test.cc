#include "ops/cpu/batch_norm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <vector>

#include "ops_test_util.h"

namespace dt::ops::cpu {
namespace {

using testing::all_close;
using testing::numeric_gradient;
using testing::random_vector;

struct Stats {
  std::vector<double> mean, var;  // biased variance
};

Stats batch_stats(const BatchNormParams& p, const std::vector<float>& x) {
  const int64_t plane = p.H * p.W, count = p.N * plane;
  Stats s{std::vector<double>(p.C, 0.0), std::vector<double>(p.C, 0.0)};
  for (int64_t n = 0; n < p.N; ++n)
    for (int64_t c = 0; c < p.C; ++c)
      for (int64_t i = 0; i < plane; ++i) s.mean[c] += x[(n * p.C + c) * plane + i];
  for (auto& m : s.mean) m /= count;
  for (int64_t n = 0; n < p.N; ++n)
    for (int64_t c = 0; c < p.C; ++c)
      for (int64_t i = 0; i < plane; ++i) {
        const double d = x[(n * p.C + c) * plane + i] - s.mean[c];
        s.var[c] += d * d;
      }
  for (auto& v : s.var) v /= count;
  return s;
}

std::vector<double> normalise(const BatchNormParams& p, const std::vector<float>& x,
                              const std::vector<float>& gamma, const std::vector<float>& beta,
                              const std::vector<double>& mean, const std::vector<double>& var) {
  const int64_t plane = p.H * p.W;
  std::vector<double> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const int64_t c = (i / plane) % p.C;
    y[i] = gamma[c] * (x[i] - mean[c]) / std::sqrt(var[c] + p.eps) + beta[c];
  }
  return y;
}

BatchNormParams make_params(int64_t N, int64_t C, int64_t H, int64_t W) {
  BatchNormParams p;
  p.N = N, p.C = C, p.H = H, p.W = W;
  p.eps = 1e-3f;
  p.momentum = 0.25f;
  return p;
}

class BatchNormShapes : public ::testing::TestWithParam<BatchNormParams> {};

TEST_P(BatchNormShapes, ForwardTrainingMatchesReference) {
  const auto p = GetParam();
  CpuEngine engine(2);
  BatchNorm bn(engine, p);
  const size_t n = p.N * p.C * p.H * p.W;
  // An offset and scale per tensor so the statistics are far from 0 and 1.
  auto x = random_vector(n, 1, 2.0f, 5.0f);
  const auto gamma = random_vector(p.C, 2, 0.5f, 1.5f), beta = random_vector(p.C, 3);
  std::vector<float> y(n), mean(p.C), var(p.C);
  std::vector<float> run_mean = random_vector(p.C, 4), run_var = random_vector(p.C, 5, 0.5f, 2.0f);
  const auto run_mean0 = run_mean, run_var0 = run_var;
  bn.forward_training(x.data(), gamma.data(), beta.data(), y.data(), mean.data(), var.data(),
                      run_mean.data(), run_var.data());

  const Stats s = batch_stats(p, x);
  EXPECT_TRUE(all_close(mean, s.mean, 1e-5, 1e-5));
  EXPECT_TRUE(all_close(var, s.var, 1e-3, 1e-5));
  EXPECT_TRUE(all_close(y, normalise(p, x, gamma, beta, s.mean, s.var), 1e-4, 1e-4));

  const double count = p.N * p.H * p.W;
  std::vector<double> exp_mean(p.C), exp_var(p.C);
  for (int64_t c = 0; c < p.C; ++c) {
    exp_mean[c] = 0.75 * run_mean0[c] + 0.25 * s.mean[c];
    exp_var[c] = 0.75 * run_var0[c] + 0.25 * s.var[c] * count / (count - 1);
  }
  EXPECT_TRUE(all_close(run_mean, exp_mean, 1e-5, 1e-5));
  EXPECT_TRUE(all_close(run_var, exp_var, 1e-4, 1e-5));
}

TEST_P(BatchNormShapes, ForwardInferenceMatchesReference) {
  const auto p = GetParam();
  CpuEngine engine(2);
  BatchNorm bn(engine, p);
  const size_t n = p.N * p.C * p.H * p.W;
  const auto x = random_vector(n, 11);
  const auto gamma = random_vector(p.C, 12), beta = random_vector(p.C, 13);
  const auto mean = random_vector(p.C, 14), var = random_vector(p.C, 15, 0.2f, 3.0f);
  std::vector<float> y(n);
  bn.forward_inference(x.data(), gamma.data(), beta.data(), mean.data(), var.data(), y.data());
  EXPECT_TRUE(all_close(y,
                        normalise(p, x, gamma, beta, std::vector<double>(mean.begin(), mean.end()),
                                  std::vector<double>(var.begin(), var.end())),
                        1e-4, 1e-5));
}

// Finite differences through forward_training: the batch statistics depend
// on x, which is the part of the gradient a wrong backward most often drops.
TEST_P(BatchNormShapes, BackwardMatchesFiniteDifferences) {
  const auto p = GetParam();
  CpuEngine engine(2);
  BatchNorm bn(engine, p);
  const size_t n = p.N * p.C * p.H * p.W;
  auto x = random_vector(n, 21);
  auto gamma = random_vector(p.C, 22, 0.5f, 1.5f), beta = random_vector(p.C, 23);
  const auto dy = random_vector(n, 24);
  std::vector<float> y(n), mean(p.C), var(p.C), rm(p.C), rv(p.C);
  auto run = [&] {
    bn.forward_training(x.data(), gamma.data(), beta.data(), y.data(), mean.data(), var.data(),
                        rm.data(), rv.data());
    return y;
  };
  run();
  std::vector<float> dx(n, 9.0f), dgamma(p.C, 9.0f), dbeta(p.C, 9.0f);
  bn.backward(x.data(), dy.data(), gamma.data(), mean.data(), var.data(), dx.data(),
              dgamma.data(), dbeta.data());
  EXPECT_TRUE(all_close(dx, numeric_gradient(x, run, dy, 1e-2f), 2e-2, 5e-3)) << "dx";
  EXPECT_TRUE(all_close(dgamma, numeric_gradient(gamma, run, dy, 1e-2f), 2e-2, 5e-3)) << "dgamma";
  EXPECT_TRUE(all_close(dbeta, numeric_gradient(beta, run, dy, 1e-2f), 2e-2, 5e-3)) << "dbeta";
}

INSTANTIATE_TEST_SUITE_P(BatchNormTest, BatchNormShapes,
                         ::testing::Values(make_params(4, 3, 5, 4), make_params(2, 16, 3, 3),
                                           make_params(8, 5, 1, 1)));

TEST(BatchNormTest, RejectsInvalidParams) {
  CpuEngine engine(1);
  auto p = make_params(2, 3, 4, 4);
  p.eps = 0.0f;
  EXPECT_THROW(BatchNorm(engine, p), std::invalid_argument);
  p = make_params(2, 3, 4, 4);
  p.momentum = 1.5f;
  EXPECT_THROW(BatchNorm(engine, p), std::invalid_argument);
  EXPECT_THROW(BatchNorm(engine, make_params(0, 3, 4, 4)), std::invalid_argument);
}

}  // namespace
}  // namespace dt::ops::cpu
