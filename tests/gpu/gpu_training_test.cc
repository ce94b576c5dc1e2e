// Whole-network training on a GPU against the same training on the CPU:
// optimizer kernels, one LeNet step, a short Fashion-MNIST run, and a net
// with Dropout (whose GPU mask must be the CPU's). Without a visible device the
// program reports a skip (exit code 77, CTest's SKIP_RETURN_CODE).
//
// Tolerances, |gpu - cpu| <= abs + rel * |cpu| per element:
//   optimizer kernels  abs 1e-6, rel 1e-6 after 5 updates. The kernels
//                      repeat the CPU loops operation for operation with
//                      every product and sum rounded on its own (no FMA) and
//                      IEEE sqrt and division, so they are expected to match
//                      bit for bit; the margin only allows for a CPU build
//                      that contracts a * b + c into an FMA (-march with FMA).
//   initial weights    exact: both nets draw them on the host from one seed.
//   LeNet step         loss rel 1e-5; weights after the step abs 1e-5,
//                      rel 1e-4. The gradients differ in summation order
//                      (cuDNN/cuBLAS vs oneDNN; gpu_ops_test allows rel 1e-3
//                      on weight gradients), and a step moves each weight by
//                      lr * grad (lr 0.05, gradients O(0.1)), so weights may
//                      differ by ~1e-5 where gradients differ by 1e-3.
//   Fashion-MNIST      after one epoch over 20000 samples from the same
//                      weights, the GPU's test accuracy is within 3 points of
//                      the CPU's, and the CPU's is above 70%.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/context.h"
#include "core/cuda/gpu_context.h"
#include "core/error.h"
#include "core/ndarray.h"
#include "data/batch_loader.h"
#include "data/mnist_dataset.h"
#include "data/split_sampler.h"
#include "gpu/gpu_test_util.h"
#include "kvstore/kvstore_factory.h"
#include "nn/model_builders.h"
#include "nn/net.h"
#include "optim/optimizer.h"
#include "optim/optimizer_config.h"
#include "train/trainer.h"

namespace dt {
namespace {

using core::DType;
using core::NDArray;
using core::Shape;

using gpu_test::expect_close;
using gpu_test::expect_same_weights;
using gpu_test::kFashionMnist;
using gpu_test::random_values;
using gpu_test::sgd_momentum;
using gpu_test::Tolerance;

constexpr Tolerance kOptimizerTolerance{1e-6, 1e-6};
constexpr Tolerance kStepWeightTolerance{1e-4, 1e-5};
constexpr double kStepLossRel = 1e-5;

// float32 arrays only here: a bitwise read-back, no cast.
std::vector<float> host_values(const NDArray& array) { return gpu_test::host_floats(array); }

NDArray array_of(const std::shared_ptr<core::Context>& ctx, const std::vector<float>& values) {
  NDArray out = NDArray::empty(ctx, DType::kFloat32, Shape({static_cast<int64_t>(values.size())}));
  out.copy_from_host(values.data(), values.size() * sizeof(float));
  return out;
}

class GpuTraining : public ::testing::Test {
 protected:
  void SetUp() override { gpu_ = core::cuda::make_gpu_context(0); }

  static std::shared_ptr<core::Context> single_thread_cpu() {
    auto ctx = core::make_cpu_context();
    ctx->set_num_threads(1);
    return ctx;
  }

  std::shared_ptr<core::Context> gpu_;
};

// ---- (a) optimizer kernels against the CPU optimizer --------------------------

void check_optimizer(const std::shared_ptr<core::Context>& gpu, const optim::OptimizerConfig& config) {
  SCOPED_TRACE(config.to_json());
  constexpr size_t kCount = 10007;  // not a multiple of a block
  const auto cpu = core::make_cpu_context();
  auto cpu_opt = optim::Optimizer::create(config);
  auto gpu_opt = optim::Optimizer::create(config);
  cpu_opt->set_rescale_grad(1.0 / 32.0);
  gpu_opt->set_rescale_grad(1.0 / 32.0);
  const std::vector<float> w0 = random_values(kCount, 1, 1.0f);
  NDArray cpu_w = array_of(cpu, w0);
  NDArray gpu_w = array_of(gpu, w0);
  for (uint32_t step = 0; step < 5; ++step) {
    // Gradients large enough that clip_gradient bites on some elements.
    const std::vector<float> g = random_values(kCount, 100 + step, 8.0f);
    cpu_opt->update(7, cpu_w, array_of(cpu, g));
    gpu_opt->update(7, gpu_w, array_of(gpu, g));
  }
  expect_close(host_values(cpu_w), host_values(gpu_w), kOptimizerTolerance, "weight");
  const core::NamedArrays cpu_state = cpu_opt->state("s/");
  const core::NamedArrays gpu_state = gpu_opt->state("s/");
  ASSERT_EQ(cpu_state.size(), gpu_state.size());
  for (size_t i = 0; i < cpu_state.size(); ++i) {
    ASSERT_EQ(cpu_state[i].first, gpu_state[i].first);
    if (cpu_state[i].second.dtype() != DType::kFloat32) continue;  // step counters, checked below
    EXPECT_EQ(gpu_state[i].second.context()->type(), core::DeviceType::kGpu) << gpu_state[i].first;
    expect_close(host_values(cpu_state[i].second), host_values(gpu_state[i].second), kOptimizerTolerance,
                 cpu_state[i].first);
  }
  EXPECT_EQ(gpu_opt->update_count(7), 5);
}

TEST_F(GpuTraining, SgdKernelsMatchCpu) {
  check_optimizer(gpu_, optim::OptimizerConfig("sgd").set("learning_rate", 0.1));
  check_optimizer(gpu_, optim::OptimizerConfig("sgd").set("learning_rate", 0.05).set("wd", 1e-3).set("momentum", 0.9));
  check_optimizer(gpu_, optim::OptimizerConfig("sgd")
                            .set("learning_rate", 0.05)
                            .set("momentum", 0.9)
                            .set("nesterov", true)
                            .set("clip_gradient", 0.1));
  check_optimizer(gpu_, optim::OptimizerConfig("nag").set("learning_rate", 0.02).set("wd", 1e-4));
}

TEST_F(GpuTraining, AdamKernelsMatchCpu) {
  check_optimizer(gpu_, optim::OptimizerConfig("adam").set("learning_rate", 0.01));
  check_optimizer(gpu_, optim::OptimizerConfig("adam").set("learning_rate", 0.01).set("wd", 1e-2).set("clip_gradient", 0.1));
  check_optimizer(gpu_, optim::OptimizerConfig("adamw").set("learning_rate", 0.003).set("epsilon", 1e-6));
}

TEST_F(GpuTraining, OptimizerRejectsWhatTheGpuPathLacks) {
  auto opt = optim::Optimizer::create(optim::OptimizerConfig("sgd"));
  const NDArray half_w = NDArray::zeros(gpu_, DType::kFloat16, Shape({4}));
  const NDArray half_g = NDArray::zeros(gpu_, DType::kFloat16, Shape({4}));
  try {
    opt->update(0, half_w, half_g);
    ADD_FAILURE() << "a float16 GPU update was accepted";
  } catch (const core::Error& e) {
    EXPECT_EQ(e.code(), core::ErrorCode::kNotSupported) << e.what();
    EXPECT_NE(std::string(e.what()).find("mixed precision"), std::string::npos) << e.what();
  }
  const NDArray gpu_w = NDArray::zeros(gpu_, DType::kFloat32, Shape({4}));
  const NDArray cpu_g = NDArray::zeros(core::make_cpu_context(), DType::kFloat32, Shape({4}));
  try {
    opt->update(1, gpu_w, cpu_g);
    ADD_FAILURE() << "a weight and gradient on different devices were accepted";
  } catch (const core::Error& e) {
    EXPECT_EQ(e.code(), core::ErrorCode::kInvalidArgument) << e.what();
  }
  EXPECT_EQ(opt->update_count(0), 0);
  EXPECT_EQ(opt->update_count(1), 0);
}

// ---- (b) one LeNet step on both devices from the same weights -------------------

std::shared_ptr<nn::Net> lenet_on(const std::shared_ptr<core::Context>& ctx, uint64_t seed) {
  auto net = std::make_shared<nn::Net>(nn::build_model_description_from_text("lenet", ""), ctx);
  net->initialize(seed);
  return net;
}

// The first `count` training images (normalised as the loader does) and labels, on the CPU.
std::pair<NDArray, NDArray> first_samples(int64_t count) {
  const auto set = data::MnistDataset::from_directory(kFashionMnist, data::MnistSplit::kTrain);
  const auto cpu = core::make_cpu_context();
  std::vector<float> images(static_cast<size_t>(count * 784));
  const uint8_t* pixels = set.images().data_as<uint8_t>();
  for (size_t i = 0; i < images.size(); ++i) images[i] = (pixels[i] / 255.0f - 0.2860f) / 0.3530f;
  NDArray x = NDArray::empty(cpu, DType::kFloat32, Shape({count, 1, 28, 28}));
  x.copy_from_host(images.data(), images.size() * sizeof(float));
  NDArray y = NDArray::empty(cpu, DType::kInt32, Shape({count}));
  y.copy_from_host(set.labels().data_as<int32_t>(), static_cast<size_t>(count) * sizeof(int32_t));
  return {x, y};
}

// Trains both nets with sgd_momentum for `steps` steps on the first 64
// samples: the GPU's loss within kStepLossRel of the CPU's at every step, its
// weights within kStepWeightTolerance after.
void expect_gpu_steps_match_cpu(const std::shared_ptr<nn::Net>& cpu_net, const std::shared_ptr<nn::Net>& gpu_net,
                                int steps) {
  train::Trainer cpu_trainer(cpu_net, sgd_momentum(), nullptr);
  train::Trainer gpu_trainer(gpu_net, sgd_momentum(), nullptr);
  // Batches on the CPU, as a loader gives them: the GPU trainer copies them over.
  const auto [x, y] = first_samples(64);
  for (int step = 0; step < steps; ++step) {
    const train::BatchResult c = cpu_trainer.train_batch(x, y);
    const train::BatchResult g = gpu_trainer.train_batch(x, y);
    EXPECT_NEAR(g.loss, c.loss, kStepLossRel * std::fabs(c.loss)) << "step " << step;
    // A near-tie in the logits may flip one arg-max between the devices.
    EXPECT_NEAR(static_cast<double>(g.correct), static_cast<double>(c.correct), 1.0) << "step " << step;
  }
  expect_same_weights(*cpu_net, *gpu_net, kStepWeightTolerance, "after " + std::to_string(steps) + " steps");
}

TEST_F(GpuTraining, LeNetStepMatchesCpu) {
  auto cpu_net = lenet_on(single_thread_cpu(), 11);
  auto gpu_net = lenet_on(gpu_, 11);
  ASSERT_EQ(cpu_net->parameters().size(), gpu_net->parameters().size());
  for (size_t i = 0; i < cpu_net->parameters().size(); ++i) {
    const nn::Parameter& g = gpu_net->parameters()[i];
    EXPECT_EQ(g.value.context()->type(), core::DeviceType::kGpu) << g.name;
    if (g.grad.defined()) EXPECT_EQ(g.grad.context()->type(), core::DeviceType::kGpu) << g.name;
    EXPECT_EQ(host_values(cpu_net->parameters()[i].value), host_values(g.value)) << "initial " << g.name;
  }

  expect_gpu_steps_match_cpu(cpu_net, gpu_net, 2);
}

TEST_F(GpuTraining, LocalKvstoreTrainsAGpuNetLikeNoKvstore) {
  const auto [x, y] = first_samples(32);
  std::vector<std::vector<float>> results;
  for (int mode = 0; mode < 3; ++mode) {
    auto net = lenet_on(gpu_, 21);
    train::TrainerOptions options;
    std::shared_ptr<kvstore::KVStore> kv;
    if (mode > 0) {
      kv = kvstore::create_kvstore("local");
      options.update_on_kvstore = mode == 1 ? 0 : 1;  // worker side (GPU kernels), then on the store (CPU)
    }
    train::Trainer trainer(net, sgd_momentum(), kv, options);
    for (int step = 0; step < 3; ++step) trainer.train_batch(x, y);
    std::vector<float> all;
    for (const nn::Parameter& p : net->parameters()) {
      const auto v = host_values(p.value);
      all.insert(all.end(), v.begin(), v.end());
    }
    results.push_back(all);
  }
  // Step tolerance, not the optimizer's: cuDNN's fastest backward-filter
  // algorithms add with atomics, so two runs of the same step differ in the
  // last bits (seen on an H200: 3 of 431080 weights by ~3e-4 relative).
  expect_close(results[0], results[1], kStepWeightTolerance, "local kvstore, updates on the GPU");
  expect_close(results[0], results[2], kStepWeightTolerance, "local kvstore, updates on the store");
}

// Several replicas of one net (TrainerOptions::extra_contexts) with a kvstore
// of `type` train like one net on the whole batch: the replicas' gradient sum
// is the whole batch's gradient up to summation order. LeNet has no batch
// norm, whose statistics would be per replica.
void expect_replicas_train_like_one_net(const std::shared_ptr<core::Context>& first,
                                        const std::shared_ptr<core::Context>& second, const std::string& type) {
  SCOPED_TRACE(type + " on " + first->to_string() + " + " + second->to_string());
  const auto [x, y] = first_samples(64);
  auto single = lenet_on(first, 31);
  auto replicated = lenet_on(first, 31);
  train::Trainer single_trainer(single, sgd_momentum(), nullptr);
  train::TrainerOptions options;
  options.extra_contexts = {second};
  options.update_on_kvstore = 0;
  train::Trainer replicated_trainer(replicated, sgd_momentum(), kvstore::create_kvstore(type), options);
  for (int step = 0; step < 3; ++step) {
    const train::BatchResult a = single_trainer.train_batch(x, y);
    const train::BatchResult b = replicated_trainer.train_batch(x, y);
    EXPECT_NEAR(b.loss, a.loss, 1e-4 * std::fabs(a.loss)) << "step " << step;
  }
  expect_same_weights(*single, *replicated, kStepWeightTolerance, "after 3 steps");
}

// Two contexts of one GPU have two streams: the store's sum must wait for the
// work queued on the other replica's stream.
TEST_F(GpuTraining, TwoReplicasOnOneGpuTrainLikeOneNet) {
  expect_replicas_train_like_one_net(gpu_, core::cuda::make_gpu_context(0), "device");
}

// Gluon's default kvstore='device': GPU replicas without a kvstore reduce
// through an internal "device" store.
TEST_F(GpuTraining, GpuReplicasWithoutAKvstoreUseTheDeviceStore) {
  train::TrainerOptions options;
  options.extra_contexts = {core::cuda::make_gpu_context(0)};
  train::Trainer trainer(lenet_on(gpu_, 31), sgd_momentum(), nullptr, options);
  ASSERT_NE(trainer.kvstore(), nullptr);
  EXPECT_EQ(trainer.kvstore()->type(), "device");
}

TEST_F(GpuTraining, ReplicasOnTwoGpusTrainLikeOneNet) {
  const int gpus = core::cuda::visible_device_count();
  if (gpus < 2) GTEST_SKIP() << "needs 2 GPUs, " << gpus << " visible";
  const auto second = core::cuda::make_gpu_context(1);
  expect_replicas_train_like_one_net(gpu_, second, "device");
  expect_replicas_train_like_one_net(gpu_, second, "local");
}

// ---- (c) a short Fashion-MNIST run reaches the CPU's accuracy --------------------

double train_one_epoch(const std::shared_ptr<core::Context>& ctx) {
  return gpu_test::fit_one_epoch(lenet_on(ctx, 5), "LeNet on " + ctx->to_string()).test_accuracy;
}

TEST_F(GpuTraining, FashionMnistLeNetReachesCpuAccuracy) {
  if (::access((std::string(kFashionMnist) + "/train-labels-idx1-ubyte.gz").c_str(), R_OK) != 0) {
    FAIL() << "Fashion-MNIST is not installed (scripts/install-deps.sh installs dataset-fashion-mnist)";
  }
  const double cpu_accuracy = train_one_epoch(core::make_cpu_context());
  const double gpu_accuracy = train_one_epoch(gpu_);
  EXPECT_GT(cpu_accuracy, 0.70);
  EXPECT_GE(gpu_accuracy, cpu_accuracy - 0.03);
}

// ---- (d) a net with Dropout: the GPU drops what the CPU drops ----------------------

TEST_F(GpuTraining, DropoutNetStepsMatchCpu) {
  const std::string description = R"({
    "format": "disttrain.net", "version": 1,
    "inputs": [{"name": "data", "shape": [1, 28, 28]}],
    "layers": [
      {"name": "flat", "type": "Flatten", "inputs": ["data"]},
      {"name": "fc1", "type": "Dense", "inputs": ["flat"], "units": 64},
      {"name": "relu", "type": "ReLU", "inputs": ["fc1"]},
      {"name": "drop", "type": "Dropout", "inputs": ["relu"], "rate": 0.5},
      {"name": "fc2", "type": "Dense", "inputs": ["drop"], "units": 10}
    ],
    "output": "fc2"
  })";
  auto cpu_net = std::shared_ptr<nn::Net>(nn::net_from_json(description, single_thread_cpu()));
  auto gpu_net = std::shared_ptr<nn::Net>(nn::net_from_json(description, gpu_));
  cpu_net->initialize(3);
  gpu_net->initialize(3);
  // Each step draws a fresh mask from (seed, name, step) on either device; a
  // different mask would change the loss by far more than kStepLossRel.
  expect_gpu_steps_match_cpu(cpu_net, gpu_net, 3);
}

}  // namespace
}  // namespace dt
