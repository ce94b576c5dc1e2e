#include "ops/cpu/conv2d.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "ops_test_util.h"

namespace dt::ops::cpu {
namespace {

using testing::all_close;
using testing::numeric_gradient;
using testing::random_vector;

size_t x_size(const Conv2DParams& p) { return p.N * p.C * p.H * p.W; }
size_t y_size(const Conv2DParams& p) { return p.N * p.K * p.out_h() * p.out_w(); }
size_t w_size(const Conv2DParams& p) { return p.K * (p.C / p.groups) * p.R * p.S; }

// Visits every (input, weight, output) triple the convolution multiplies,
// in float64: the forward and both backward references are this one loop.
template <typename Visit>
void for_each_tap(const Conv2DParams& p, Visit visit) {
  const int64_t P = p.out_h(), Q = p.out_w();
  const int64_t cg = p.C / p.groups, kg = p.K / p.groups;
  for (int64_t n = 0; n < p.N; ++n)
    for (int64_t k = 0; k < p.K; ++k)
      for (int64_t oh = 0; oh < P; ++oh)
        for (int64_t ow = 0; ow < Q; ++ow) {
          const size_t yi = ((n * p.K + k) * P + oh) * Q + ow;
          const int64_t g = k / kg;
          for (int64_t c = 0; c < cg; ++c)
            for (int64_t r = 0; r < p.R; ++r)
              for (int64_t s = 0; s < p.S; ++s) {
                const int64_t ih = oh * p.stride_h - p.pad_h + r * p.dilation_h;
                const int64_t iw = ow * p.stride_w - p.pad_w + s * p.dilation_w;
                if (ih < 0 || ih >= p.H || iw < 0 || iw >= p.W) continue;
                const size_t xi = ((n * p.C + g * cg + c) * p.H + ih) * p.W + iw;
                const size_t wi = ((k * cg + c) * p.R + r) * p.S + s;
                visit(xi, wi, yi, k);
              }
        }
}

struct Data {
  std::vector<float> x, w, b, dy;
};

Data make_data(const Conv2DParams& p, uint32_t seed) {
  return {random_vector(x_size(p), seed), random_vector(w_size(p), seed + 1),
          random_vector(p.K, seed + 2), random_vector(y_size(p), seed + 3)};
}

std::vector<double> reference_forward(const Conv2DParams& p, const Data& d) {
  std::vector<double> y(y_size(p), 0.0);
  const int64_t plane = p.out_h() * p.out_w();
  if (p.has_bias)
    for (size_t i = 0; i < y.size(); ++i) y[i] = d.b[(i / plane) % p.K];
  for_each_tap(p, [&](size_t xi, size_t wi, size_t yi, int64_t) {
    y[yi] += static_cast<double>(d.x[xi]) * d.w[wi];
  });
  return y;
}

Conv2DParams make_params(int64_t N, int64_t C, int64_t H, int64_t W, int64_t K, int64_t R,
                         int64_t S) {
  Conv2DParams p;
  p.N = N, p.C = C, p.H = H, p.W = W, p.K = K, p.R = R, p.S = S;
  return p;
}

// Shapes that take different paths through oneDNN: plain and blocked
// layouts, strides, padding, dilation, groups, no bias, 1x1, odd sizes.
std::vector<std::pair<std::string, Conv2DParams>> cases() {
  std::vector<std::pair<std::string, Conv2DParams>> out;
  out.emplace_back("basic", make_params(2, 3, 9, 8, 4, 3, 3));
  auto strided = make_params(2, 4, 11, 10, 6, 3, 3);
  strided.stride_h = strided.stride_w = 2;
  strided.pad_h = 1, strided.pad_w = 2;
  out.emplace_back("stride2_pad", strided);
  auto dilated = make_params(1, 3, 12, 12, 5, 3, 3);
  dilated.dilation_h = dilated.dilation_w = 2;
  dilated.pad_h = dilated.pad_w = 2;
  out.emplace_back("dilation2", dilated);
  auto grouped = make_params(2, 4, 7, 7, 6, 3, 3);
  grouped.groups = 2;
  grouped.pad_h = grouped.pad_w = 1;
  out.emplace_back("groups2", grouped);
  auto nobias = make_params(2, 5, 8, 8, 7, 5, 5);
  nobias.has_bias = false;
  out.emplace_back("no_bias", nobias);
  auto blocked = make_params(2, 16, 8, 8, 32, 3, 3);
  blocked.pad_h = blocked.pad_w = 1;
  out.emplace_back("blocked_16to32", blocked);
  auto down = make_params(2, 16, 8, 8, 24, 1, 1);
  down.stride_h = down.stride_w = 2;
  down.has_bias = false;
  out.emplace_back("pointwise_stride2", down);
  auto rect = make_params(1, 2, 6, 9, 3, 2, 4);
  rect.stride_h = 1, rect.stride_w = 3, rect.dilation_h = 2;
  out.emplace_back("rectangular", rect);
  return out;
}

TEST(Conv2DTest, ForwardMatchesReference) {
  CpuEngine engine(2);
  uint32_t seed = 10;
  for (const auto& [name, p] : cases()) {
    SCOPED_TRACE(name);
    Conv2D conv(engine, p);
    const Data d = make_data(p, seed += 10);
    std::vector<float> y(y_size(p), 7.0f);
    conv.forward(d.x.data(), d.w.data(), p.has_bias ? d.b.data() : nullptr, y.data());
    EXPECT_TRUE(all_close(y, reference_forward(p, d), 1e-4, 1e-4));
  }
}

TEST(Conv2DTest, BackwardMatchesReference) {
  CpuEngine engine(2);
  uint32_t seed = 500;
  for (const auto& [name, p] : cases()) {
    SCOPED_TRACE(name);
    Conv2D conv(engine, p);
    const Data d = make_data(p, seed += 10);
    std::vector<double> dx_ref(x_size(p), 0.0), dw_ref(w_size(p), 0.0), db_ref(p.K, 0.0);
    for_each_tap(p, [&](size_t xi, size_t wi, size_t yi, int64_t) {
      dx_ref[xi] += static_cast<double>(d.w[wi]) * d.dy[yi];
      dw_ref[wi] += static_cast<double>(d.x[xi]) * d.dy[yi];
    });
    const int64_t plane = p.out_h() * p.out_w();
    for (size_t i = 0; i < d.dy.size(); ++i) db_ref[(i / plane) % p.K] += d.dy[i];

    std::vector<float> dx(x_size(p), 7.0f), dw(w_size(p), 7.0f), db(p.K, 7.0f);
    conv.backward_data(d.dy.data(), d.w.data(), dx.data());
    conv.backward_weights(d.x.data(), d.dy.data(), dw.data(), p.has_bias ? db.data() : nullptr);
    EXPECT_TRUE(all_close(dx, dx_ref, 1e-4, 1e-4)) << "dx";
    EXPECT_TRUE(all_close(dw, dw_ref, 1e-4, 1e-4)) << "dw";
    if (p.has_bias) {
      EXPECT_TRUE(all_close(db, db_ref, 1e-4, 1e-4)) << "db";
    }
  }
}

// Ties the backward passes to the forward pass itself rather than to a
// reference written with the same index conventions.
TEST(Conv2DTest, BackwardMatchesFiniteDifferences) {
  CpuEngine engine(2);
  auto p = make_params(2, 4, 6, 5, 4, 3, 3);
  p.stride_h = 2, p.pad_w = 1, p.dilation_w = 2, p.groups = 2;
  Conv2D conv(engine, p);
  Data d = make_data(p, 77);
  std::vector<float> y(y_size(p));
  auto run = [&] {
    conv.forward(d.x.data(), d.w.data(), d.b.data(), y.data());
    return y;
  };
  std::vector<float> dx(x_size(p)), dw(w_size(p)), db(p.K);
  conv.backward_data(d.dy.data(), d.w.data(), dx.data());
  conv.backward_weights(d.x.data(), d.dy.data(), dw.data(), db.data());
  EXPECT_TRUE(all_close(dx, numeric_gradient(d.x, run, d.dy, 1e-2f), 2e-2, 2e-3)) << "dx";
  EXPECT_TRUE(all_close(dw, numeric_gradient(d.w, run, d.dy, 1e-2f), 2e-2, 2e-3)) << "dw";
  EXPECT_TRUE(all_close(db, numeric_gradient(d.b, run, d.dy, 1e-2f), 2e-2, 2e-3)) << "db";
}

TEST(Conv2DTest, OutputsAreOverwrittenAcrossCalls) {
  CpuEngine engine(2);
  auto p = make_params(2, 8, 6, 6, 16, 3, 3);
  Conv2D conv(engine, p);
  const Data d = make_data(p, 3);
  std::vector<float> first(y_size(p)), second(y_size(p), -3.0f);
  conv.forward(d.x.data(), d.w.data(), d.b.data(), first.data());
  conv.forward(d.x.data(), d.w.data(), d.b.data(), second.data());
  EXPECT_EQ(first, second);
  std::vector<float> dw1(w_size(p)), dw2(w_size(p), 5.0f), db1(p.K), db2(p.K, 5.0f);
  conv.backward_weights(d.x.data(), d.dy.data(), dw1.data(), db1.data());
  conv.backward_weights(d.x.data(), d.dy.data(), dw2.data(), db2.data());
  EXPECT_EQ(dw1, dw2);
  EXPECT_EQ(db1, db2);
}

TEST(Conv2DTest, RejectsInvalidParams) {
  CpuEngine engine(1);
  auto bad_groups = make_params(1, 3, 8, 8, 4, 3, 3);
  bad_groups.groups = 2;
  EXPECT_THROW(Conv2D(engine, bad_groups), std::invalid_argument);
  auto too_big = make_params(1, 3, 4, 4, 4, 5, 5);
  EXPECT_THROW(Conv2D(engine, too_big), std::invalid_argument);
  auto zero_stride = make_params(1, 3, 8, 8, 4, 3, 3);
  zero_stride.stride_w = 0;
  EXPECT_THROW(Conv2D(engine, zero_stride), std::invalid_argument);
  auto zero_dilation = make_params(1, 3, 8, 8, 4, 3, 3);
  zero_dilation.dilation_h = 0;
  EXPECT_THROW(Conv2D(engine, zero_dilation), std::invalid_argument);
  EXPECT_THROW(Conv2D(engine, Conv2DParams{}), std::invalid_argument);

  Conv2D ok(engine, make_params(1, 3, 8, 8, 4, 3, 3));
  std::vector<float> buf(1000);
  EXPECT_THROW(ok.forward(buf.data(), buf.data(), nullptr, buf.data()), std::invalid_argument);
}

}  // namespace
}  // namespace dt::ops::cpu
