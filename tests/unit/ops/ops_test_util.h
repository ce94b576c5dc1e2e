#pragma once

// Helpers shared by the CPU kernel tests: seeded inputs, element-wise
// comparison that reports the worst element, and central finite differences.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "ops/conv2d.h"

namespace dt::ops::cpu::testing {

inline std::vector<float> random_vector(size_t n, uint32_t seed, float lo = -1.0f,
                                        float hi = 1.0f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (auto& e : v) e = dist(gen);
  return v;
}

// Passes when |actual[i] - expected[i]| <= atol + rtol * |expected[i]| for
// every i; otherwise names the worst element.
template <typename A, typename E>
::testing::AssertionResult all_close(const std::vector<A>& actual, const std::vector<E>& expected,
                                     double rtol, double atol) {
  if (actual.size() != expected.size()) {
    return ::testing::AssertionFailure()
           << "size " << actual.size() << " != expected size " << expected.size();
  }
  size_t bad = 0, worst = 0;
  double worst_excess = 0.0;
  for (size_t i = 0; i < actual.size(); ++i) {
    const double a = static_cast<double>(actual[i]);
    const double e = static_cast<double>(expected[i]);
    const double limit = atol + rtol * std::fabs(e);
    const double err = std::fabs(a - e);
    if (!(err <= limit)) {
      ++bad;
      const double excess = std::isfinite(err) ? err / limit : INFINITY;
      if (bad == 1 || excess > worst_excess) {
        worst_excess = excess;
        worst = i;
      }
    }
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << bad << " of " << actual.size() << " elements differ; worst at " << worst
         << ": actual " << actual[worst] << " expected " << expected[worst];
}

// d/dp of L(p) = sum_j r_j * f(p)_j for every element of `param`, by central
// differences; f reads `param` (which is restored) and returns the output.
inline std::vector<double> numeric_gradient(std::vector<float>& param,
                                            const std::function<std::vector<float>()>& f,
                                            const std::vector<float>& r, float eps) {
  auto project = [&](const std::vector<float>& y) {
    double s = 0.0;
    for (size_t j = 0; j < y.size(); ++j) s += static_cast<double>(r[j]) * y[j];
    return s;
  };
  std::vector<double> grad(param.size());
  for (size_t i = 0; i < param.size(); ++i) {
    const float saved = param[i];
    param[i] = saved + eps;
    const double plus = project(f());
    param[i] = saved - eps;
    const double minus = project(f());
    param[i] = saved;
    grad[i] = (plus - minus) / (2.0 * static_cast<double>(eps));
  }
  return grad;
}

// Seeded inputs of a convolution's shapes: x, w (smaller, so outputs stay
// O(1)), b and dy, with their element counts.
struct ConvInputs {
  size_t nx, nw, ny, nb;
  std::vector<float> x, w, b, dy;
};

inline ConvInputs conv_inputs(const Conv2DParams& p, uint32_t seed) {
  ConvInputs in;
  in.nx = static_cast<size_t>(p.N * p.C * p.H * p.W);
  in.nw = static_cast<size_t>(p.K * (p.C / p.groups) * p.R * p.S);
  in.ny = static_cast<size_t>(p.N * p.K * p.out_h() * p.out_w());
  in.nb = static_cast<size_t>(p.K);
  in.x = random_vector(in.nx, seed);
  in.w = random_vector(in.nw, seed + 1, -0.5f, 0.5f);
  in.b = random_vector(in.nb, seed + 2);
  in.dy = random_vector(in.ny, seed + 3);
  return in;
}

}  // namespace dt::ops::cpu::testing
