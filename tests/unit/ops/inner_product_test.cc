#include "ops/cpu/inner_product.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "ops_test_util.h"

namespace dt::ops::cpu {
namespace {

using testing::all_close;
using testing::numeric_gradient;
using testing::random_vector;

InnerProductParams make_params(int64_t N, int64_t in, int64_t out, bool bias) {
  InnerProductParams p;
  p.N = N, p.in = in, p.out = out, p.has_bias = bias;
  return p;
}

class InnerProductShapes : public ::testing::TestWithParam<InnerProductParams> {};

TEST_P(InnerProductShapes, ForwardAndBackwardMatchReference) {
  const auto p = GetParam();
  CpuEngine engine(2);
  InnerProduct ip(engine, p);
  const auto x = random_vector(p.N * p.in, 1), w = random_vector(p.out * p.in, 2);
  const auto b = random_vector(p.out, 3), dy = random_vector(p.N * p.out, 4);

  std::vector<double> y_ref(p.N * p.out), dx_ref(p.N * p.in, 0.0), dw_ref(p.out * p.in, 0.0),
      db_ref(p.out, 0.0);
  for (int64_t n = 0; n < p.N; ++n)
    for (int64_t o = 0; o < p.out; ++o) {
      double s = p.has_bias ? b[o] : 0.0;
      const double g = dy[n * p.out + o];
      for (int64_t i = 0; i < p.in; ++i) {
        s += static_cast<double>(x[n * p.in + i]) * w[o * p.in + i];
        dx_ref[n * p.in + i] += g * w[o * p.in + i];
        dw_ref[o * p.in + i] += g * x[n * p.in + i];
      }
      y_ref[n * p.out + o] = s;
      db_ref[o] += g;
    }

  std::vector<float> y(p.N * p.out, 9.0f), dx(p.N * p.in, 9.0f), dw(p.out * p.in, 9.0f),
      db(p.out, 9.0f);
  const float* bias = p.has_bias ? b.data() : nullptr;
  ip.forward(x.data(), w.data(), bias, y.data());
  ip.backward_data(dy.data(), w.data(), dx.data());
  ip.backward_weights(x.data(), dy.data(), dw.data(), p.has_bias ? db.data() : nullptr);
  EXPECT_TRUE(all_close(y, y_ref, 1e-4, 1e-4)) << "y";
  EXPECT_TRUE(all_close(dx, dx_ref, 1e-4, 1e-4)) << "dx";
  EXPECT_TRUE(all_close(dw, dw_ref, 1e-4, 1e-4)) << "dw";
  if (p.has_bias) {
    EXPECT_TRUE(all_close(db, db_ref, 1e-4, 1e-4)) << "db";
  }
}

INSTANTIATE_TEST_SUITE_P(InnerProductTest, InnerProductShapes,
                         ::testing::Values(make_params(4, 7, 5, true), make_params(3, 16, 24, false),
                                           make_params(64, 800, 500, true),
                                           make_params(64, 500, 10, true),
                                           make_params(1, 33, 1, true)));

TEST(InnerProductTest, BackwardMatchesFiniteDifferences) {
  CpuEngine engine(2);
  const auto p = make_params(3, 6, 4, true);
  InnerProduct ip(engine, p);
  auto x = random_vector(p.N * p.in, 5), w = random_vector(p.out * p.in, 6),
       b = random_vector(p.out, 7);
  const auto dy = random_vector(p.N * p.out, 8);
  std::vector<float> y(p.N * p.out);
  auto run = [&] {
    ip.forward(x.data(), w.data(), b.data(), y.data());
    return y;
  };
  std::vector<float> dx(x.size()), dw(w.size()), db(b.size());
  ip.backward_data(dy.data(), w.data(), dx.data());
  ip.backward_weights(x.data(), dy.data(), dw.data(), db.data());
  EXPECT_TRUE(all_close(dx, numeric_gradient(x, run, dy, 1e-2f), 2e-2, 1e-3)) << "dx";
  EXPECT_TRUE(all_close(dw, numeric_gradient(w, run, dy, 1e-2f), 2e-2, 1e-3)) << "dw";
  EXPECT_TRUE(all_close(db, numeric_gradient(b, run, dy, 1e-2f), 2e-2, 1e-3)) << "db";
}

TEST(InnerProductTest, RejectsInvalidParams) {
  CpuEngine engine(1);
  EXPECT_THROW(InnerProduct(engine, make_params(0, 3, 4, true)), std::invalid_argument);
  EXPECT_THROW(InnerProduct(engine, make_params(2, 3, -1, true)), std::invalid_argument);
  InnerProduct ip(engine, make_params(2, 3, 4, true));
  std::vector<float> buf(64);
  EXPECT_THROW(ip.forward(buf.data(), buf.data(), nullptr, buf.data()), std::invalid_argument);
}

}  // namespace
}  // namespace dt::ops::cpu
