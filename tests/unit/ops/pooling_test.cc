#include "ops/cpu/pooling.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "ops_test_util.h"

namespace dt::ops::cpu {
namespace {

using testing::all_close;
using testing::numeric_gradient;
using testing::random_vector;

Pool2DParams make_params(int64_t N, int64_t C, int64_t H, int64_t W, int64_t k, int64_t stride,
                         int64_t pad) {
  Pool2DParams p;
  p.N = N, p.C = C, p.H = H, p.W = W;
  p.kernel_h = p.kernel_w = k;
  p.stride_h = p.stride_w = stride;
  p.pad_h = p.pad_w = pad;
  return p;
}

size_t x_size(const Pool2DParams& p) { return p.N * p.C * p.H * p.W; }
size_t y_size(const Pool2DParams& p) { return p.N * p.C * p.out_h() * p.out_w(); }

enum class Mode { kMax, kAvgInclude, kAvgExclude };

// Visits each output with the list of input indices in its window and the
// number of window positions that fall in padding.
template <typename Visit>
void for_each_window(const Pool2DParams& p, Visit visit) {
  const int64_t P = p.out_h(), Q = p.out_w();
  std::vector<size_t> taps;
  for (int64_t nc = 0; nc < p.N * p.C; ++nc)
    for (int64_t oh = 0; oh < P; ++oh)
      for (int64_t ow = 0; ow < Q; ++ow) {
        taps.clear();
        for (int64_t r = 0; r < p.kernel_h; ++r)
          for (int64_t s = 0; s < p.kernel_w; ++s) {
            const int64_t ih = oh * p.stride_h - p.pad_h + r;
            const int64_t iw = ow * p.stride_w - p.pad_w + s;
            if (ih >= 0 && ih < p.H && iw >= 0 && iw < p.W) taps.push_back((nc * p.H + ih) * p.W + iw);
          }
        visit((nc * P + oh) * Q + ow, taps);
      }
}

std::vector<double> reference_forward(const Pool2DParams& p, const std::vector<float>& x, Mode mode) {
  std::vector<double> y(y_size(p));
  for_each_window(p, [&](size_t yi, const std::vector<size_t>& taps) {
    if (mode == Mode::kMax) {
      double m = -std::numeric_limits<double>::infinity();
      for (size_t t : taps) m = std::max(m, static_cast<double>(x[t]));
      y[yi] = m;
    } else {
      double s = 0.0;
      for (size_t t : taps) s += x[t];
      const double denom = mode == Mode::kAvgInclude ? p.kernel_h * p.kernel_w : taps.size();
      y[yi] = s / denom;
    }
  });
  return y;
}

// Distinct values at least 0.05 apart, so that no window has a near tie and
// finite differences with eps 1e-2 never cross an argmax change.
std::vector<float> distinct_values(size_t n, uint32_t seed) {
  std::vector<float> v(n);
  std::iota(v.begin(), v.end(), 0.0f);
  std::mt19937 gen(seed);
  std::shuffle(v.begin(), v.end(), gen);
  for (auto& e : v) e = (e - n / 2.0f) * 0.05f;
  return v;
}

std::vector<std::pair<std::string, Pool2DParams>> cases() {
  return {{"k2s2", make_params(2, 3, 8, 8, 2, 2, 0)},
          {"k3s2_pad1", make_params(2, 3, 9, 7, 3, 2, 1)},
          {"k3s1_pad1", make_params(1, 4, 6, 5, 3, 1, 1)},
          {"k2s2_odd", make_params(2, 16, 7, 7, 2, 2, 0)}};
}

// Large enough that the loops split the planes across threads.
Pool2DParams large_params() { return make_params(4, 32, 17, 17, 3, 2, 1); }

TEST(MaxPool2DTest, ForwardMatchesReference) {
  CpuEngine engine(2);
  uint32_t seed = 1;
  for (const auto& [name, p] : cases()) {
    SCOPED_TRACE(name);
    MaxPool2D pool(engine, p);
    const auto x = random_vector(x_size(p), ++seed);
    std::vector<float> y(y_size(p), 9.0f), y_inf(y_size(p), 9.0f);
    pool.forward_training(x.data(), y.data());
    pool.forward_inference(x.data(), y_inf.data());
    const auto ref = reference_forward(p, x, Mode::kMax);
    EXPECT_TRUE(all_close(y, ref, 0.0, 0.0));
    EXPECT_TRUE(all_close(y_inf, ref, 0.0, 0.0));
  }
}

TEST(MaxPool2DTest, BackwardMatchesFiniteDifferences) {
  CpuEngine engine(2);
  uint32_t seed = 40;
  for (const auto& [name, p] : cases()) {
    SCOPED_TRACE(name);
    MaxPool2D pool(engine, p);
    auto x = distinct_values(x_size(p), ++seed);
    const auto dy = random_vector(y_size(p), ++seed);
    std::vector<float> y(y_size(p)), dx(x_size(p), 9.0f);
    pool.forward_training(x.data(), y.data());
    pool.backward(dy.data(), dx.data());
    auto run = [&] {
      std::vector<float> out(y_size(p));
      pool.forward_inference(x.data(), out.data());
      return out;
    };
    EXPECT_TRUE(all_close(dx, numeric_gradient(x, run, dy, 1e-2f), 1e-3, 1e-3));
  }
}

TEST(MaxPool2DTest, LargeMatchesReference) {
  CpuEngine engine(2);
  const auto p = large_params();
  MaxPool2D pool(engine, p);
  const auto x = distinct_values(x_size(p), 7);
  const auto dy = random_vector(y_size(p), 8);
  std::vector<double> dx_ref(x_size(p), 0.0);
  for_each_window(p, [&](size_t yi, const std::vector<size_t>& taps) {
    size_t best = taps[0];
    for (size_t t : taps) best = x[t] > x[best] ? t : best;
    dx_ref[best] += dy[yi];
  });
  std::vector<float> y(y_size(p), 9.0f), dx(x_size(p), 9.0f);
  pool.forward_training(x.data(), y.data());
  pool.backward(dy.data(), dx.data());
  EXPECT_TRUE(all_close(y, reference_forward(p, x, Mode::kMax), 0.0, 0.0));
  EXPECT_TRUE(all_close(dx, dx_ref, 1e-6, 1e-6));
}

TEST(MaxPool2DTest, PropagatesNaN) {
  CpuEngine engine(1);
  MaxPool2D pool(engine, make_params(1, 1, 2, 4, 2, 2, 0));
  const std::vector<float> x{1, NAN, 5, 6, 3, 4, 7, 8};
  std::vector<float> y(2);
  pool.forward_training(x.data(), y.data());
  EXPECT_TRUE(std::isnan(y[0]));
  EXPECT_EQ(y[1], 8.0f);
}

TEST(MaxPool2DTest, BackwardUsesLatestTrainingForward) {
  CpuEngine engine(1);
  const auto p = make_params(1, 1, 2, 2, 2, 2, 0);
  MaxPool2D pool(engine, p);
  const std::vector<float> a{1, 0, 0, 0}, b{0, 0, 0, 1}, dy{1};
  std::vector<float> y(1), dx(4);
  pool.forward_training(a.data(), y.data());
  pool.forward_training(b.data(), y.data());
  pool.forward_inference(a.data(), y.data());
  pool.backward(dy.data(), dx.data());
  EXPECT_EQ(dx, (std::vector<float>{0, 0, 0, 1}));
}

TEST(MaxPool2DTest, BackwardBeforeForwardThrows) {
  CpuEngine engine(1);
  MaxPool2D pool(engine, make_params(1, 1, 4, 4, 2, 2, 0));
  std::vector<float> dy(4), dx(16);
  EXPECT_THROW(pool.backward(dy.data(), dx.data()), std::logic_error);
}

TEST(AvgPool2DTest, ForwardMatchesReference) {
  CpuEngine engine(2);
  uint32_t seed = 70;
  for (const bool include : {true, false}) {
    for (const auto& [name, p] : cases()) {
      SCOPED_TRACE(name + (include ? " include_pad" : " exclude_pad"));
      AvgPool2D pool(engine, p, include);
      const auto x = random_vector(x_size(p), ++seed);
      std::vector<float> y(y_size(p), 9.0f);
      pool.forward(x.data(), y.data());
      EXPECT_TRUE(all_close(y, reference_forward(p, x, include ? Mode::kAvgInclude : Mode::kAvgExclude),
                            1e-5, 1e-6));
    }
  }
}

TEST(AvgPool2DTest, BackwardMatchesReference) {
  CpuEngine engine(2);
  uint32_t seed = 90;
  for (const bool include : {true, false}) {
    for (const auto& [name, p] : cases()) {
      SCOPED_TRACE(name + (include ? " include_pad" : " exclude_pad"));
      AvgPool2D pool(engine, p, include);
      const auto dy = random_vector(y_size(p), ++seed);
      std::vector<double> ref(x_size(p), 0.0);
      for_each_window(p, [&](size_t yi, const std::vector<size_t>& taps) {
        const double denom = include ? p.kernel_h * p.kernel_w : taps.size();
        for (size_t t : taps) ref[t] += dy[yi] / denom;
      });
      std::vector<float> dx(x_size(p), 9.0f);
      pool.backward(dy.data(), dx.data());
      EXPECT_TRUE(all_close(dx, ref, 1e-5, 1e-6));
    }
  }
}

TEST(GlobalAvgPool2DTest, ForwardAndBackwardMatchReference) {
  CpuEngine engine(2);
  // Small planes, then enough 16 x 16 planes to split across threads.
  for (const auto& [N, C, H, W] : {std::array<int64_t, 4>{3, 5, 4, 3}, {4, 40, 16, 16}}) {
    GlobalAvgPool2D pool(engine, N, C, H, W);
    const auto x = random_vector(N * C * H * W, 5);
    const auto dy = random_vector(N * C, 6);
    std::vector<double> y_ref(N * C, 0.0), dx_ref(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      y_ref[i / (H * W)] += x[i] / double(H * W);
      dx_ref[i] = dy[i / (H * W)] / double(H * W);
    }
    std::vector<float> y(N * C), dx(x.size());
    pool.forward(x.data(), y.data());
    pool.backward(dy.data(), dx.data());
    EXPECT_TRUE(all_close(y, y_ref, 1e-5, 1e-6));
    EXPECT_TRUE(all_close(dx, dx_ref, 1e-6, 0.0));
  }
}

TEST(Pool2DTest, RejectsInvalidParams) {
  CpuEngine engine(1);
  EXPECT_THROW(MaxPool2D(engine, make_params(1, 1, 4, 4, 2, 0, 0)), std::invalid_argument);
  EXPECT_THROW(MaxPool2D(engine, make_params(1, 1, 4, 4, 2, 2, 2)), std::invalid_argument);
  EXPECT_THROW(AvgPool2D(engine, make_params(1, 1, 2, 2, 3, 1, 0), true), std::invalid_argument);
  EXPECT_THROW(GlobalAvgPool2D(engine, 1, 0, 2, 2), std::invalid_argument);
}

}  // namespace
}  // namespace dt::ops::cpu
