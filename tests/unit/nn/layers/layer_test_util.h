#pragma once

// Helpers for the layer tests: arrays from vectors, a harness that owns a
// layer's inputs, parameters and output the way Net would, element-wise
// comparison naming the worst element, and central finite differences of
// the projected output L = sum(r * y).

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/context.h"
#include "core/error.h"
#include "core/ndarray.h"
#include "error_code_of.h"
#include "nn/layer.h"
#include "ops/cpu/cpu_engine.h"

namespace dt::nn::layers::testing {

inline std::shared_ptr<core::Context> cpu() { return core::make_cpu_context(); }

inline core::NDArray make_array(const core::Shape& shape, const std::vector<float>& values) {
  core::NDArray a = core::NDArray::empty(cpu(), core::DType::kFloat32, shape);
  a.copy_from_host(values.data(), values.size() * sizeof(float));
  return a;
}

inline std::vector<float> to_vector(const core::NDArray& a) {
  std::vector<float> v(a.size());
  a.copy_to_host(v.data(), v.size() * sizeof(float));
  return v;
}

inline std::vector<float> random_values(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (auto& e : v) e = dist(gen);
  return v;
}

// Values at least `gap` apart in a random order: no ties for max pooling and
// no element within gap / 2 of a kink once shifted by `offset`.
inline std::vector<float> distinct_values(size_t n, uint32_t seed, float gap, float offset) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = offset + gap * static_cast<float>(i);
  std::shuffle(v.begin(), v.end(), std::mt19937(seed));
  return v;
}

using test_support::code_of;

// Passes when |actual[i] - expected[i]| <= atol + rtol * |expected[i]| for all i.
template <typename A, typename E>
::testing::AssertionResult all_close(const std::vector<A>& actual, const std::vector<E>& expected, double rtol,
                                     double atol) {
  if (actual.size() != expected.size()) {
    return ::testing::AssertionFailure() << "size " << actual.size() << " != " << expected.size();
  }
  size_t bad = 0, worst = 0;
  double worst_excess = 0.0;
  for (size_t i = 0; i < actual.size(); ++i) {
    const double a = static_cast<double>(actual[i]);
    const double e = static_cast<double>(expected[i]);
    const double err = std::fabs(a - e);
    const double limit = atol + rtol * std::fabs(e);
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
  return ::testing::AssertionFailure() << bad << " of " << actual.size() << " differ; worst at " << worst
                                       << ": actual " << actual[worst] << " expected " << expected[worst];
}

// A layer with everything Net would give it: inputs, parameters (gradients
// allocated, grad_req write), output, and a runtime with a one-thread engine.
class Harness {
 public:
  Harness(Layer& layer, const std::vector<core::Shape>& input_shapes, uint32_t seed) : layer_(layer) {
    runtime_.engine = &engine_;
    runtime_.seed = 1234;
    runtime_.step = 7;
    for (size_t i = 0; i < input_shapes.size(); ++i) {
      inputs_.push_back(make_array(input_shapes[i], random_values(input_shapes[i].numel(), seed + 17 * i)));
    }
    const std::vector<ParamSpec> specs = layer.param_specs(input_shapes);
    for (size_t i = 0; i < specs.size(); ++i) {
      auto p = std::make_unique<Parameter>();
      p->name = layer.name() + "." + specs[i].suffix;
      p->auxiliary = specs[i].auxiliary;
      p->init = specs[i].init;
      p->value = core::NDArray::empty(cpu(), core::DType::kFloat32, specs[i].shape);
      if (p->auxiliary) {
        p->init.fill(p->value, seed, p->name);
      } else {
        // Random rather than the layer's init: zero biases or unit gammas
        // would hide a gradient that ignores them.
        p->value.copy_from_host(random_values(p->value.size(), seed + 101 * (i + 1), -0.8f, 0.8f).data(),
                                p->value.nbytes());
        p->grad = core::NDArray::zeros(cpu(), core::DType::kFloat32, specs[i].shape);
      }
      params_.push_back(std::move(p));
    }
    output_ = core::NDArray::empty(cpu(), core::DType::kFloat32, layer.output_shape(input_shapes));
    for (const core::NDArray& in : inputs_) {
      input_grads_.push_back(core::NDArray::zeros(cpu(), core::DType::kFloat32, in.shape()));
    }
  }

  size_t num_inputs() const { return inputs_.size(); }
  core::NDArray& input(size_t i) { return inputs_[i]; }
  Parameter& param(size_t i) { return *params_[i]; }
  size_t num_params() const { return params_.size(); }
  core::NDArray& output() { return output_; }
  core::NDArray& input_grad(size_t i) { return input_grads_[i]; }
  LayerRuntime& runtime() { return runtime_; }

  std::vector<float> forward(bool train) {
    ForwardArgs args;
    for (const core::NDArray& in : inputs_) args.inputs.push_back(&in);
    for (auto& p : params_) args.params.push_back(p.get());
    args.output = &output_;
    args.train = train;
    args.runtime = &runtime_;
    layer_.forward(args);
    return to_vector(output_);
  }

  // need_input_grad[i] false passes nullptr for input i.
  void backward(const std::vector<float>& dy, const std::vector<bool>& need_input_grad = {}) {
    const core::NDArray dy_array = make_array(output_.shape(), dy);
    BackwardArgs args;
    for (const core::NDArray& in : inputs_) args.inputs.push_back(&in);
    args.output = &output_;
    args.output_grad = &dy_array;
    for (size_t i = 0; i < input_grads_.size(); ++i) {
      const bool need = need_input_grad.empty() || need_input_grad[i];
      args.input_grads.push_back(need ? &input_grads_[i] : nullptr);
    }
    for (auto& p : params_) args.params.push_back(p.get());
    args.runtime = &runtime_;
    layer_.backward(args);
  }

 private:
  Layer& layer_;
  ops::cpu::CpuEngine engine_{1};
  LayerRuntime runtime_;
  std::vector<core::NDArray> inputs_;
  std::vector<std::unique_ptr<Parameter>> params_;
  core::NDArray output_;
  std::vector<core::NDArray> input_grads_;
};

// d/dv of sum(r * forward()) for every element of `array` (restored after),
// by central differences with step eps.
inline std::vector<double> numeric_gradient(core::NDArray& array, const std::function<std::vector<float>()>& forward,
                                            const std::vector<float>& r, float eps) {
  auto project = [&](const std::vector<float>& y) {
    double s = 0.0;
    for (size_t j = 0; j < y.size(); ++j) s += static_cast<double>(r[j]) * y[j];
    return s;
  };
  float* v = array.data_as<float>();
  std::vector<double> grad(array.size());
  for (size_t i = 0; i < array.size(); ++i) {
    const float saved = v[i];
    v[i] = saved + eps;
    const double plus = project(forward());
    v[i] = saved - eps;
    const double minus = project(forward());
    v[i] = saved;
    grad[i] = (plus - minus) / (2.0 * static_cast<double>(eps));
  }
  return grad;
}

// Checks every input gradient and every learnable parameter's gradient of
// the harness's layer against central differences of its forward (in the
// given mode) under the projection L = sum(r * y).
inline void expect_gradients_match(Harness& h, bool train, float eps, double rtol, double atol,
                                   uint32_t seed = 99) {
  const std::vector<float> y = h.forward(train);
  const std::vector<float> r = random_values(y.size(), seed);
  h.backward(r);
  auto forward = [&] { return h.forward(train); };
  for (size_t i = 0; i < h.num_inputs(); ++i) {
    SCOPED_TRACE("input " + std::to_string(i));
    const std::vector<float> analytic = to_vector(h.input_grad(i));
    EXPECT_TRUE(all_close(analytic, numeric_gradient(h.input(i), forward, r, eps), rtol, atol));
  }
  for (size_t i = 0; i < h.num_params(); ++i) {
    if (h.param(i).auxiliary) continue;
    SCOPED_TRACE("parameter " + h.param(i).name);
    const std::vector<float> analytic = to_vector(h.param(i).grad);
    EXPECT_TRUE(all_close(analytic, numeric_gradient(h.param(i).value, forward, r, eps), rtol, atol));
  }
}

}  // namespace dt::nn::layers::testing
