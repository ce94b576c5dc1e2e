// Mixed precision on a GPU, (d) and (e) of gpu_mixed_precision_test.cc:
// dynamic loss scaling backing off on an overflow with the step skipped, and
// a Fashion-MNIST LeNet run in 16 bits reaching float32's accuracy.
#include "gpu_mixed_precision_test_util.h"

namespace dt::gpu_mixed_precision_test {

// ---- (d) loss scaling ---------------------------------------------------------------

class GpuLossScaling : public ::testing::Test {
 protected:
  void SetUp() override { gpu_ = core::cuda::make_gpu_context(0); }

  std::shared_ptr<nn::Net> float16_lenet() {
    auto net = std::make_shared<nn::Net>(nn::build_model_description_from_text("lenet", ""), gpu_);
    net->set_compute_dtype(DType::kFloat16);
    net->initialize(5);
    return net;
  }

  // A scale small enough that these steps (summed loss over random inputs)
  // cannot overflow float16, so that they must be applied.
  static nn::LossScaler safe_scaler() {
    nn::LossScalerOptions options;
    options.init_scale = 128.0;
    return nn::LossScaler(options);
  }

  std::pair<NDArray, NDArray> batch(int64_t n) {
    const NDArray x = array_of(gpu_, DType::kFloat32, Shape({n, 1, 28, 28}),
                               random_values(static_cast<size_t>(n * 28 * 28), 8));
    std::vector<int32_t> labels(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) labels[static_cast<size_t>(i)] = static_cast<int32_t>(i % 10);
    NDArray y = NDArray::empty(gpu_, DType::kInt32, Shape({n}));
    y.copy_from_host(labels.data(), labels.size() * sizeof(int32_t));
    return {x, y};
  }

  std::shared_ptr<core::Context> gpu_;
};

std::vector<float> all_weights(const nn::Net& net) {
  std::vector<float> out;
  for (const nn::Parameter& p : net.parameters()) {
    const std::vector<float> v = host_floats(p.value);
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}

TEST_F(GpuLossScaling, Float16DefaultsToGradScalersScaleAndBfloat16ToNone) {
  auto net = float16_lenet();
  EXPECT_TRUE(net->loss_scaler().enabled());
  EXPECT_EQ(net->loss_scaler().scale(), 65536.0);
  nn::Net bf16(nn::build_model_description_from_text("lenet", ""), gpu_);
  bf16.set_compute_dtype(DType::kBFloat16);
  EXPECT_FALSE(bf16.loss_scaler().enabled());
}

TEST_F(GpuLossScaling, OverflowIsSkippedAndTheScaleBacksOff) {
  auto net = float16_lenet();
  nn::LossScalerOptions options;
  // Any loss gradient times 2^100 overflows float16: the step must overflow.
  options.init_scale = 0x1.0p100;
  net->set_loss_scaler(nn::LossScaler(options));
  train::Trainer trainer(net, optim::OptimizerConfig("sgd").set("learning_rate", 0.1), nullptr);
  const auto [x, y] = batch(32);
  const std::vector<float> before = all_weights(*net);

  trainer.train_batch(x, y);
  EXPECT_FALSE(net->gradients_finite());
  EXPECT_EQ(trainer.skipped_steps(), 1);
  EXPECT_EQ(net->loss_scaler().scale(), 0x1.0p99);
  EXPECT_EQ(all_weights(*net), before) << "an overflowed step must not update the weights";

  // A sane scale: the next step applies, its gradients are finite.
  net->set_loss_scaler(safe_scaler());
  trainer.train_batch(x, y);
  EXPECT_TRUE(net->gradients_finite());
  EXPECT_EQ(trainer.skipped_steps(), 0);  // the new scaler counts from zero
  EXPECT_NE(all_weights(*net), before);
  EXPECT_EQ(net->loss_scaler().growth_tracker(), 1);
}

// Weights written straight into the float32 masters (a kvstore pull, a
// dt_net_param handle), with no backward between, reach the next forward.
TEST_F(GpuLossScaling, ForwardSeesWeightsWrittenFromOutside) {
  auto net = float16_lenet();
  const auto [x, y] = batch(4);
  net->forward({x}, false);
  const std::vector<float> before = host_floats(net->output(0));
  ASSERT_NE(before, std::vector<float>(before.size(), 0.0f));
  for (nn::Parameter& p : net->parameters()) {
    if (!p.auxiliary) ops::fill(p.value, 0.0);
  }
  net->forward({x}, false);
  // No weights, no biases: every logit is zero.
  EXPECT_EQ(host_floats(net->output(0)), std::vector<float>(before.size(), 0.0f));
}

TEST_F(GpuLossScaling, UpdateOnKvstoreIsRejectedWithFloat16) {
  auto net = float16_lenet();
  train::TrainerOptions options;
  options.update_on_kvstore = 1;
  train::Trainer trainer(net, optim::OptimizerConfig("sgd").set("learning_rate", 0.1),
                         kvstore::create_kvstore("local"), options);
  const auto [x, y] = batch(8);
  try {
    trainer.train_batch(x, y);
    ADD_FAILURE() << "expected Error(kNotSupported)";
  } catch (const core::Error& e) {
    EXPECT_EQ(e.code(), core::ErrorCode::kNotSupported);
    EXPECT_NE(std::string(e.what()).find("update_on_kvstore"), std::string::npos) << e.what();
  }
}

TEST_F(GpuLossScaling, DefaultUpdateOnKvstorePicksTheWorkersWithFloat16) {
  auto net = float16_lenet();
  net->set_loss_scaler(safe_scaler());
  train::Trainer trainer(net, optim::OptimizerConfig("sgd").set("learning_rate", 0.05),
                         kvstore::create_kvstore("local"));
  EXPECT_TRUE(trainer.update_on_kvstore());  // -1 with a store that runs optimizers
  const auto [x, y] = batch(32);
  const auto before = all_weights(*net);
  trainer.train_batch(x, y);
  EXPECT_FALSE(trainer.update_on_kvstore());  // chosen at the first step: only workers can skip
  EXPECT_EQ(trainer.skipped_steps(), 0);
  EXPECT_NE(all_weights(*net), before);
}

TEST_F(GpuLossScaling, CheckpointsCarryTheLossScale) {
  const std::string path = ::testing::TempDir() + "/dt_loss_scale_checkpoint.safetensors";
  const auto [x, y] = batch(32);
  auto net = float16_lenet();
  nn::LossScalerOptions options;
  options.init_scale = 256.0;
  options.growth_interval = 3;
  net->set_loss_scaler(nn::LossScaler(options));
  train::Trainer trainer(net, optim::OptimizerConfig("sgd").set("learning_rate", 0.05), nullptr);
  for (int i = 0; i < 4; ++i) trainer.train_batch(x, y);  // grows once, then one clean step
  ASSERT_EQ(trainer.skipped_steps(), 0);
  ASSERT_EQ(net->loss_scaler().scale(), 512.0);
  ASSERT_EQ(net->loss_scaler().growth_tracker(), 1);
  trainer.save_checkpoint(path);

  auto resumed = float16_lenet();
  resumed->set_loss_scaler(nn::LossScaler(options));
  train::Trainer resumed_trainer(resumed, optim::OptimizerConfig("sgd").set("learning_rate", 0.05), nullptr);
  resumed_trainer.load_checkpoint(path);
  resumed_trainer.train_batch(x, y);
  EXPECT_EQ(resumed->loss_scaler().scale(), 512.0);  // restored at the step, then one clean step
  EXPECT_EQ(resumed->loss_scaler().growth_tracker(), 2);
  std::remove(path.c_str());
}

TEST_F(GpuLossScaling, LocalKvstoreReducesThenChecks) {
  auto net = float16_lenet();
  net->set_loss_scaler(safe_scaler());
  train::TrainerOptions options;
  options.update_on_kvstore = 0;
  train::Trainer trainer(net, optim::OptimizerConfig("sgd").set("learning_rate", 0.05),
                         kvstore::create_kvstore("local"), options);
  const auto [x, y] = batch(32);
  for (int i = 0; i < 3; ++i) trainer.train_batch(x, y);
  EXPECT_EQ(trainer.skipped_steps(), 0);
  EXPECT_EQ(net->loss_scaler().growth_tracker(), 3);
}

// ---- (e) Fashion-MNIST: 16 bits reach float32's accuracy ------------------------------

double lenet_accuracy(const std::shared_ptr<core::Context>& gpu, DType dtype) {
  auto net = std::make_shared<nn::Net>(nn::build_model_description_from_text("lenet", ""), gpu);
  if (dtype != DType::kFloat32) net->set_compute_dtype(dtype);
  net->initialize(5);
  return gpu_test::fit_one_epoch(net, std::string("LeNet in ") + core::dtype_name(dtype)).test_accuracy;
}

TEST_F(GpuLossScaling, FashionMnistLeNetReachesFloat32Accuracy) {
  if (::access((std::string(kFashionMnist) + "/train-labels-idx1-ubyte.gz").c_str(), R_OK) != 0) {
    FAIL() << "Fashion-MNIST is not installed (scripts/install-deps.sh installs dataset-fashion-mnist)";
  }
  const double f32 = lenet_accuracy(gpu_, DType::kFloat32);
  EXPECT_GT(f32, 0.70);
  EXPECT_GE(lenet_accuracy(gpu_, DType::kFloat16), f32 - 0.03);
  EXPECT_GE(lenet_accuracy(gpu_, DType::kBFloat16), f32 - 0.03);
}

}  // namespace dt::gpu_mixed_precision_test
