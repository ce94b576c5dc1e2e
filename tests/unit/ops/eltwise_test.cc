#include "ops/cpu/eltwise.h"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "ops_test_util.h"

namespace dt::ops::cpu {
namespace {

using testing::all_close;
using testing::numeric_gradient;
using testing::random_vector;

double reference(Activation kind, double x) {
  switch (kind) {
    case Activation::kRelu:
      return x > 0 ? x : 0.0;
    case Activation::kSigmoid:
      return 1.0 / (1.0 + std::exp(-x));
    case Activation::kTanh:
      return std::tanh(x);
  }
  return NAN;
}

const char* name(Activation kind) {
  switch (kind) {
    case Activation::kRelu:
      return "relu";
    case Activation::kSigmoid:
      return "sigmoid";
    case Activation::kTanh:
      return "tanh";
  }
  return "?";
}

// Inputs at least 0.05 away from 0 so that relu's kink is outside the
// finite-difference step; the odd count exercises the vector tail.
std::vector<float> inputs(size_t n, uint32_t seed) {
  auto x = random_vector(n, seed, -4.0f, 4.0f);
  for (auto& e : x) {
    if (std::fabs(e) < 0.05f) e = e < 0 ? -0.05f : 0.05f;
  }
  return x;
}

TEST(EltwiseTest, ForwardMatchesReference) {
  CpuEngine engine(2);
  for (const auto kind : {Activation::kRelu, Activation::kSigmoid, Activation::kTanh}) {
    SCOPED_TRACE(name(kind));
    const size_t n = 1001;
    Eltwise op(engine, kind, n);
    const auto x = inputs(n, 1);
    std::vector<double> ref(n);
    for (size_t i = 0; i < n; ++i) ref[i] = reference(kind, x[i]);
    std::vector<float> y(n, 9.0f);
    op.forward(x.data(), y.data());
    EXPECT_TRUE(all_close(y, ref, 1e-5, 1e-6));
    std::vector<float> in_place = x;
    op.forward(in_place.data(), in_place.data());
    EXPECT_TRUE(all_close(in_place, ref, 1e-5, 1e-6));
  }
}

TEST(EltwiseTest, BackwardMatchesFiniteDifferences) {
  CpuEngine engine(2);
  for (const auto kind : {Activation::kRelu, Activation::kSigmoid, Activation::kTanh}) {
    SCOPED_TRACE(name(kind));
    const size_t n = 257;
    Eltwise op(engine, kind, n);
    auto x = inputs(n, 2);
    const auto dy = random_vector(n, 3);
    std::vector<float> y(n), dx(n, 9.0f);
    op.forward(x.data(), y.data());
    op.backward(y.data(), dy.data(), dx.data());
    auto run = [&] {
      std::vector<float> out(n);
      op.forward(x.data(), out.data());
      return out;
    };
    EXPECT_TRUE(all_close(dx, numeric_gradient(x, run, dy, 1e-2f), 2e-2, 1e-3));
  }
}

TEST(EltwiseTest, RejectsInvalidArguments) {
  CpuEngine engine(1);
  EXPECT_THROW(Eltwise(engine, Activation::kRelu, 0), std::invalid_argument);
  EXPECT_THROW(Eltwise(engine, static_cast<Activation>(42), 4), std::invalid_argument);
  Eltwise op(engine, Activation::kTanh, 4);
  std::vector<float> buf(4);
  EXPECT_THROW(op.forward(nullptr, buf.data()), std::invalid_argument);
}

}  // namespace
}  // namespace dt::ops::cpu
