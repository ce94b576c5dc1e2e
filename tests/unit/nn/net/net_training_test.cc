// End to end: LeNet learns a synthetic 10-class task with plain SGD written
// here (w -= lr * grad), which exercises forward, backward through every
// layer type of LeNet, the loss and the parameter gradients together.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>

#include "nn/model_builders.h"
#include "nn/net.h"
#include "ops/tensor_math.h"
#include "net_test_util.h"

namespace dt::nn {
namespace {

constexpr int kClasses = 10;
constexpr int64_t kPixels = 28 * 28;

// Ten fixed random images; a sample is one of them plus Gaussian noise as
// strong as the templates themselves, so no single pixel tells the class
// but the whole image does.
class TemplateTask {
 public:
  explicit TemplateTask(uint32_t seed) : rng_(seed), templates_(kClasses * kPixels) {
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (float& v : templates_) v = normal(rng_);
  }

  // A batch drawn from this task's random stream: images and labels.
  std::pair<core::NDArray, core::NDArray> batch(const std::shared_ptr<core::Context>& ctx, int64_t size) {
    std::uniform_int_distribution<int> pick(0, kClasses - 1);
    std::normal_distribution<float> noise(0.0f, 1.0f);
    std::vector<float> images(static_cast<size_t>(size * kPixels));
    std::vector<int32_t> labels(static_cast<size_t>(size));
    for (int64_t i = 0; i < size; ++i) {
      labels[i] = pick(rng_);
      for (int64_t p = 0; p < kPixels; ++p) images[i * kPixels + p] = templates_[labels[i] * kPixels + p] + noise(rng_);
    }
    return {testing::float_array(ctx, core::Shape{size, 1, 28, 28}, images), testing::labels_array(ctx, labels)};
  }

 private:
  std::mt19937 rng_;
  std::vector<float> templates_;
};

double accuracy(Net& net, const core::NDArray& images, const core::NDArray& labels) {
  net.forward({images}, false);
  const auto logits = testing::to_vector(net.output(0));
  std::vector<int32_t> truth(labels.size());
  labels.copy_to_host(truth.data(), truth.size() * sizeof(int32_t));
  int correct = 0;
  for (size_t i = 0; i < truth.size(); ++i) {
    int best = 0;
    for (int c = 1; c < kClasses; ++c) {
      if (logits[i * kClasses + c] > logits[i * kClasses + best]) best = c;
    }
    correct += best == truth[i] ? 1 : 0;
  }
  return static_cast<double>(correct) / static_cast<double>(truth.size());
}

TEST(NetTraining, LeNetLearnsTemplatesWithPlainSgd) {
  const auto start = std::chrono::steady_clock::now();
  auto ctx = core::make_cpu_context();
  // One thread: steady timing when the suite shares its cores with other work.
  ctx->set_num_threads(1);
  Net net(build_model_description_from_text("lenet", ""), ctx);
  net.initialize(2024);
  TemplateTask task(7);
  const auto [eval_images, eval_labels] = task.batch(ctx, 500);

  const double untrained = accuracy(net, eval_images, eval_labels);
  EXPECT_LT(untrained, 0.3) << "an untrained net should be near chance (10%)";

  constexpr int kSteps = 150;
  constexpr int64_t kBatch = 32;
  // Larger rates (0.02) can overshoot in the first steps and collapse the
  // net to a constant output (loss ln 10) with some initialisers.
  constexpr double kLearningRate = 0.01;
  double first_loss = 0.0, last_loss = 0.0;
  for (int step = 0; step < kSteps; ++step) {
    const auto [images, labels] = task.batch(ctx, kBatch);
    net.forward({images}, true);
    const double loss = net.backward(labels);
    ASSERT_TRUE(std::isfinite(loss)) << "step " << step;
    if (step == 0) first_loss = loss;
    last_loss = loss;
    for (Parameter& p : net.parameters()) {
      if (!p.auxiliary) ops::axpy(p.value, -kLearningRate, p.grad);
    }
  }
  const double trained = accuracy(net, eval_images, eval_labels);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("LeNet on 10 noisy templates: accuracy %.1f%% untrained, %.1f%% after %d SGD steps of %lld "
              "(loss %.3f -> %.3f), %.1f s\n",
              100 * untrained, 100 * trained, kSteps, static_cast<long long>(kBatch), first_loss, last_loss, seconds);
  EXPECT_GE(trained, 0.9);
  EXPECT_LT(last_loss, first_loss);
}

}  // namespace
}  // namespace dt::nn
