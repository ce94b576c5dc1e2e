// What the GPU tests share: seeded random inputs, arrays of any float dtype
// from them and read back as float32, and comparisons (per element, in the
// max norm, two nets' weights).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/context.h"
#include "core/dtype.h"
#include "core/ndarray.h"
#include "core/shape.h"
#include "data/batch_loader.h"
#include "data/mnist_dataset.h"
#include "data/split_sampler.h"
#include "nn/net.h"
#include "ops/tensor_math.h"
#include "optim/optimizer_config.h"
#include "train/trainer.h"

namespace dt::gpu_test {

constexpr const char* kFashionMnist = "/usr/share/datasets/fashion-mnist";

// n normal values of standard deviation `scale`, the same for a seed.
inline std::vector<float> random_values(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen);
  return v;
}

// Any float array's values (on any device) as float32 on the host.
inline std::vector<float> host_floats(const core::NDArray& array) {
  core::NDArray f32 = array;
  if (array.dtype() != core::DType::kFloat32) {
    f32 = core::NDArray::empty(array.context(), core::DType::kFloat32, array.shape());
    ops::cast(f32, array);
  }
  std::vector<float> out(f32.size());
  f32.copy_to_host(out.data(), out.size() * sizeof(float));
  return out;
}

struct Tolerance {
  double rel;
  double abs;
};

// |got - want| <= abs + rel * |want| per element; counts the elements
// outside and reports the first few.
inline void expect_close(const std::vector<float>& want, const std::vector<float>& got, Tolerance tol,
                         const std::string& what) {
  ASSERT_EQ(want.size(), got.size()) << what;
  size_t bad = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double limit = tol.abs + tol.rel * std::fabs(want[i]);
    if (!(std::fabs(static_cast<double>(got[i]) - want[i]) <= limit)) {
      if (++bad <= 3) ADD_FAILURE() << what << "[" << i << "]: want " << want[i] << ", got " << got[i];
    }
  }
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << want.size() << " elements differ";
}

// An array of `dtype` on ctx holding `values` (rounded to dtype).
inline core::NDArray array_of(const std::shared_ptr<core::Context>& ctx, core::DType dtype, const core::Shape& shape,
                              const std::vector<float>& values) {
  core::NDArray f32 = core::NDArray::empty(ctx, core::DType::kFloat32, shape);
  f32.copy_from_host(values.data(), values.size() * sizeof(float));
  if (dtype == core::DType::kFloat32) return f32;
  core::NDArray out = core::NDArray::empty(ctx, dtype, shape);
  ops::cast(out, f32);
  return out;
}

// max |got - want| <= rel * max |want|, and both finite.
inline void expect_close_in_max_norm(const std::vector<float>& want, const std::vector<float>& got, double rel,
                                     const std::string& what) {
  ASSERT_EQ(want.size(), got.size()) << what;
  double max_want = 0.0, max_diff = 0.0;
  size_t worst = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_TRUE(std::isfinite(got[i])) << what << "[" << i << "] = " << got[i];
    max_want = std::max(max_want, std::fabs(static_cast<double>(want[i])));
    const double diff = std::fabs(static_cast<double>(got[i]) - want[i]);
    if (diff > max_diff) {
      max_diff = diff;
      worst = i;
    }
  }
  EXPECT_LE(max_diff, rel * max_want) << what << ": worst at [" << worst << "]: float32 " << want[worst]
                                      << ", low precision " << got[worst] << " (max |float32| " << max_want << ")";
}

// Every parameter of got against the same one of want, by expect_close.
inline void expect_same_weights(const nn::Net& want, const nn::Net& got, Tolerance tol, const std::string& when) {
  ASSERT_EQ(want.parameters().size(), got.parameters().size());
  for (size_t i = 0; i < want.parameters().size(); ++i) {
    const nn::Parameter& p = want.parameters()[i];
    expect_close(host_floats(p.value), host_floats(got.parameters()[i].value), tol, p.name + " " + when);
  }
}

// SGD with momentum as the GPU training tests use it.
inline optim::OptimizerConfig sgd_momentum() {
  return optim::OptimizerConfig("sgd").set("learning_rate", 0.05).set("momentum", 0.9).set("wd", 1e-4);
}

// Part 0 of num_parts of a Fashion-MNIST split, in batches of 64.
inline std::unique_ptr<data::BatchLoader> fashion_mnist_loader(data::MnistSplit split, int num_parts, bool shuffle) {
  auto dataset = std::make_shared<const data::MnistDataset>(data::MnistDataset::from_directory(kFashionMnist, split));
  const data::SplitSampler sampler(dataset->size(), num_parts, 0, shuffle, /*seed=*/42);
  data::LoaderOptions options;
  options.batch_size = 64;
  return std::make_unique<data::BatchLoader>(dataset, sampler, options);
}

// One epoch of sgd_momentum over 20000 training samples (a third of the
// split: ~310 steps, enough that two runs' accuracies differ by run-to-run
// noise of about a point rather than the several points of a 94-step run),
// evaluated on 2000 test samples; printed with `label`.
inline train::EpochRecord fit_one_epoch(const std::shared_ptr<nn::Net>& net, const std::string& label) {
  train::Trainer trainer(net, sgd_momentum(), nullptr);
  auto train_loader = fashion_mnist_loader(data::MnistSplit::kTrain, 3, true);
  auto test_loader = fashion_mnist_loader(data::MnistSplit::kTest, 5, false);
  train::FitOptions options;
  options.epochs = 1;
  options.progress = train::ProgressMode::kSilent;
  const train::EpochRecord record = trainer.fit(*train_loader, test_loader.get(), options);
  std::printf("%s, 1 epoch of 20000: loss %.4f, test accuracy %.4f, %.0f images/s, %lld skipped steps\n",
              label.c_str(), record.loss, record.test_accuracy, record.images_per_s,
              static_cast<long long>(trainer.skipped_steps()));
  return record;
}

}  // namespace dt::gpu_test
