#include "train/trainer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "data/mnist_dataset.h"
#include "kvstore/kvstore_factory.h"
#include "nn/model_builders.h"

namespace dt::train {
namespace {

using core::NDArray;

constexpr const char* kFashionMnist = "/usr/share/datasets/fashion-mnist";

std::shared_ptr<core::Context> single_thread_cpu() {
  auto ctx = core::make_cpu_context();
  // One kernel thread: results must not depend on how work is split.
  ctx->set_num_threads(1);
  return ctx;
}

std::shared_ptr<nn::Net> lenet(uint64_t seed) {
  auto net = std::make_shared<nn::Net>(nn::build_model_description_from_text("lenet", ""), single_thread_cpu());
  net->initialize(seed);
  return net;
}

optim::OptimizerConfig sgd_momentum() {
  return optim::OptimizerConfig("sgd").set("learning_rate", 0.05).set("momentum", 0.9).set("wd", 1e-4);
}

// 1/30 of Fashion-MNIST's training set (2000 samples), shuffled by epoch.
std::unique_ptr<data::BatchLoader> small_loader() {
  auto dataset = std::make_shared<const data::MnistDataset>(
      data::MnistDataset::from_directory(kFashionMnist, data::MnistSplit::kTrain));
  const data::SplitSampler sampler(dataset->size(), 30, 7, /*shuffle=*/true, /*seed=*/42);
  data::LoaderOptions options;
  options.batch_size = 50;
  return std::make_unique<data::BatchLoader>(dataset, sampler, options);
}

std::vector<float> all_weights(const nn::Net& net) {
  std::vector<float> out;
  for (const nn::Parameter& p : net.parameters()) {
    const float* v = p.value.data_as<float>();
    out.insert(out.end(), v, v + p.value.size());
  }
  return out;
}

std::string temp_path(const std::string& name) {
  return "/tmp/dt-trainer-test-" + std::to_string(::getpid()) + "-" + name;
}

// Every weight of b equals a's, bit for bit.
void expect_same_weights(const nn::Net& a, const nn::Net& b) {
  const auto x = all_weights(a);
  const auto y = all_weights(b);
  ASSERT_EQ(x.size(), y.size());
  size_t differing = 0;
  for (size_t i = 0; i < x.size(); ++i) differing += x[i] != y[i];
  EXPECT_EQ(differing, 0u) << "of " << x.size() << " weights";
}

FitOptions quiet(int epochs) {
  FitOptions options;
  options.epochs = epochs;
  options.progress = ProgressMode::kSilent;
  return options;
}

class TrainerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::access((std::string(kFashionMnist) + "/train-labels-idx1-ubyte.gz").c_str(), R_OK) != 0) {
      FAIL() << "Fashion-MNIST is not installed (scripts/install-deps.sh installs dataset-fashion-mnist)";
    }
  }
};

TEST_F(TrainerTest, ResumedRunIsBitIdenticalToAnUninterruptedOne) {
  // Three epochs in one go.
  auto straight = lenet(3);
  {
    Trainer trainer(straight, sgd_momentum(), kvstore::create_kvstore("local"));
    auto loader = small_loader();
    trainer.fit(*loader, nullptr, quiet(3));
    EXPECT_EQ(trainer.epoch(), 3);
  }
  // Two epochs, a checkpoint, and a fresh process-like restart for the third.
  const std::string checkpoint = temp_path("resume.safetensors");
  {
    Trainer trainer(lenet(3), sgd_momentum(), kvstore::create_kvstore("local"));
    auto loader = small_loader();
    trainer.fit(*loader, nullptr, quiet(2));
    trainer.save_checkpoint(checkpoint);
  }
  auto resumed = lenet(99);  // different initial weights: the checkpoint must replace them
  {
    Trainer trainer(resumed, sgd_momentum(), kvstore::create_kvstore("local"));
    trainer.load_checkpoint(checkpoint);
    EXPECT_EQ(trainer.epoch(), 2);
    auto loader = small_loader();
    trainer.fit(*loader, nullptr, quiet(3));
  }
  std::remove(checkpoint.c_str());
  expect_same_weights(*straight, *resumed);
}

// fit stages its batches (data/batch_stager.h): on the CPU that must train
// exactly as a loop that feeds the loader's own batches to train_batch.
TEST_F(TrainerTest, FitThroughTheStagerEqualsAHandFedLoopBitForBit) {
  auto staged = lenet(6);
  {
    Trainer trainer(staged, sgd_momentum(), nullptr);
    auto loader = small_loader();
    trainer.fit(*loader, nullptr, quiet(2));
  }
  auto hand_fed = lenet(6);
  {
    Trainer trainer(hand_fed, sgd_momentum(), nullptr);
    auto loader = small_loader();
    data::Batch batch;
    for (int epoch = 0; epoch < 2; ++epoch) {
      loader->start_epoch(epoch);
      while (loader->next(batch)) trainer.train_batch(batch.images, batch.labels);
    }
    EXPECT_EQ(trainer.steps(), 2 * loader->batches_per_epoch());
  }
  expect_same_weights(*staged, *hand_fed);
  // And the weights moved: equal because both trained, not because neither did.
  EXPECT_NE(all_weights(*staged), all_weights(*lenet(6)));
}

// Issue 19, item 4: with a checkpoint directory the same fit call restarts
// a stopped job from the manifest's epoch, bit for bit; an epoch whose
// files were being written when the job died (no manifest yet) is ignored.
TEST_F(TrainerTest, ACheckpointDirectoryRestartsTheSameCommandFromTheLastCompleteEpoch) {
  auto straight = lenet(3);
  {
    Trainer trainer(straight, sgd_momentum(), kvstore::create_kvstore("local"));
    auto loader = small_loader();
    trainer.fit(*loader, nullptr, quiet(3));
  }
  const std::string dir = temp_path("checkpoints");
  std::filesystem::remove_all(dir);
  FitOptions options = quiet(2);
  options.checkpoint_dir = dir;
  {
    Trainer trainer(lenet(3), sgd_momentum(), kvstore::create_kvstore("local"));
    auto loader = small_loader();
    trainer.fit(*loader, nullptr, options);  // "stopped" after epoch 2
  }
  EXPECT_TRUE(std::filesystem::exists(dir + "/MANIFEST.json"));
  EXPECT_TRUE(std::filesystem::exists(dir + "/epoch-2/worker-0.safetensors"));
  EXPECT_FALSE(std::filesystem::exists(dir + "/epoch-1")) << "older epochs are removed";
  // A half-written epoch 3, as a killed job leaves it: not in the manifest.
  std::filesystem::create_directories(dir + "/epoch-3");
  { std::ofstream(dir + "/epoch-3/worker-0.safetensors") << "partial"; }
  auto resumed = lenet(99);  // the directory's checkpoint must replace these weights
  options.epochs = 3;
  {
    Trainer trainer(resumed, sgd_momentum(), kvstore::create_kvstore("local"));
    auto loader = small_loader();
    const EpochRecord last = trainer.fit(*loader, nullptr, options);
    EXPECT_EQ(last.epoch, 3) << "one epoch trained after resuming from epoch 2";
  }
  expect_same_weights(*straight, *resumed);
  EXPECT_FALSE(std::filesystem::exists(dir + "/epoch-2"));
  std::filesystem::remove_all(dir);
}

TEST_F(TrainerTest, ResumeWorksWithWorkerSideUpdatesToo) {
  TrainerOptions worker_side;
  worker_side.update_on_kvstore = 0;
  auto straight = lenet(5);
  {
    Trainer trainer(straight, sgd_momentum(), kvstore::create_kvstore("local"), worker_side);
    ASSERT_FALSE(trainer.update_on_kvstore());
    auto loader = small_loader();
    trainer.fit(*loader, nullptr, quiet(2));
  }
  const std::string checkpoint = temp_path("resume-worker.safetensors");
  {
    Trainer trainer(lenet(5), sgd_momentum(), kvstore::create_kvstore("local"), worker_side);
    auto loader = small_loader();
    trainer.fit(*loader, nullptr, quiet(1));
    trainer.save_checkpoint(checkpoint);
  }
  auto resumed = lenet(6);
  {
    Trainer trainer(resumed, sgd_momentum(), kvstore::create_kvstore("local"), worker_side);
    trainer.load_checkpoint(checkpoint);
    auto loader = small_loader();
    trainer.fit(*loader, nullptr, quiet(2));
  }
  std::remove(checkpoint.c_str());
  EXPECT_EQ(all_weights(*straight), all_weights(*resumed));
}

TEST_F(TrainerTest, TwoCpuContextsMatchOneContextWithTheWholeBatch) {
  auto loader = small_loader();
  loader->start_epoch(0);
  data::Batch batch;
  ASSERT_TRUE(loader->next(batch));

  auto one = lenet(11);
  Trainer single(one, sgd_momentum(), kvstore::create_kvstore("local"));
  auto two = lenet(11);
  TrainerOptions options;
  options.extra_contexts = {single_thread_cpu()};
  Trainer split(two, sgd_momentum(), kvstore::create_kvstore("local"), options);
  for (int step = 0; step < 3; ++step) {
    const BatchResult a = single.train_batch(batch.images, batch.labels);
    const BatchResult b = split.train_batch(batch.images, batch.labels);
    EXPECT_NEAR(a.loss, b.loss, 1e-5 * std::abs(a.loss));
    EXPECT_EQ(a.correct, b.correct);
  }
  // The halves' gradients are summed instead of computed in one pass, so
  // float rounding differs slightly; weights are O(0.1), hence 1e-5 absolute.
  const auto a = all_weights(*one);
  const auto b = all_weights(*two);
  ASSERT_EQ(a.size(), b.size());
  double max_diff = 0.0;
  for (size_t i = 0; i < a.size(); ++i) max_diff = std::max(max_diff, std::abs(double(a[i]) - double(b[i])));
  EXPECT_LT(max_diff, 1e-5);
}

// Gluon's kvstore='device' default, on CPUs: an internal "local" store (the
// GPU case, "device", is in tests/gpu/gpu_training_test.cc).
TEST_F(TrainerTest, CpuReplicasWithoutAKvstoreReduceThroughALocalStore) {
  TrainerOptions options;
  options.extra_contexts = {single_thread_cpu()};
  Trainer split(lenet(11), sgd_momentum(), nullptr, options);
  ASSERT_NE(split.kvstore(), nullptr);
  EXPECT_EQ(split.kvstore()->type(), "local");
  Trainer single(lenet(11), sgd_momentum(), nullptr);
  EXPECT_EQ(single.kvstore(), nullptr);
}

TEST_F(TrainerTest, NoKvstoreAndLocalKvstoreGiveTheSameWeights) {
  auto loader = small_loader();
  loader->start_epoch(0);
  data::Batch batch;
  ASSERT_TRUE(loader->next(batch));
  auto a = lenet(2);
  auto b = lenet(2);
  Trainer direct(a, sgd_momentum(), nullptr);
  Trainer through_store(b, sgd_momentum(), kvstore::create_kvstore("local"));
  for (int step = 0; step < 3; ++step) {
    direct.train_batch(batch.images, batch.labels);
    through_store.train_batch(batch.images, batch.labels);
  }
  EXPECT_EQ(all_weights(*a), all_weights(*b));
}

TEST_F(TrainerTest, FitWritesOneMetricsLinePerEpochAndLearns) {
  auto net = lenet(4);
  Trainer trainer(net, sgd_momentum(), nullptr);
  auto train = small_loader();
  const std::string metrics = temp_path("metrics.jsonl");
  FitOptions options = quiet(2);
  options.metrics_path = metrics;
  const EpochRecord last = trainer.fit(*train, train.get(), options);
  EXPECT_EQ(last.epoch, 2);
  EXPECT_GT(last.train_accuracy, 0.5);  // chance is 0.1
  EXPECT_GT(last.images_per_s, 0.0);
  std::ifstream in(metrics);
  std::string line;
  int lines = 0;
  while (std::getline(in, line)) {
    ++lines;
    EXPECT_NE(line.find("\"epoch\":" + std::to_string(lines)), std::string::npos) << line;
    EXPECT_NE(line.find("\"test_accuracy\""), std::string::npos) << line;
    // No kvstore: nothing moved over the network.
    EXPECT_NE(line.find("\"bytes_sent\":0,\"bytes_received\":0"), std::string::npos) << line;
  }
  EXPECT_EQ(lines, 2);
  std::remove(metrics.c_str());
}

TEST(TrainerOverlap, OnlyAsynchronousStoresOverlapAndTheSwitchIsChecked) {
  // The local kvstore completes every request at once: nothing to overlap.
  Trainer local(lenet(1), sgd_momentum(), kvstore::create_kvstore("local"));
  EXPECT_FALSE(local.overlaps_communication());
  Trainer alone(lenet(1), sgd_momentum(), nullptr);
  EXPECT_FALSE(alone.overlaps_communication());
  TrainerOptions bad;
  bad.overlap_communication = 2;
  EXPECT_THROW(Trainer(lenet(1), sgd_momentum(), nullptr, bad), core::Error);
  ::setenv("DT_KVSTORE_OVERLAP", "yes", 1);
  try {
    Trainer t(lenet(1), sgd_momentum(), nullptr);
    ADD_FAILURE() << "DT_KVSTORE_OVERLAP=yes was accepted";
  } catch (const core::Error& e) {
    EXPECT_EQ(e.code(), core::ErrorCode::kInvalidArgument);
  }
  ::unsetenv("DT_KVSTORE_OVERLAP");
}

TEST_F(TrainerTest, CheckpointMisuseIsAClearError) {
  auto net = lenet(1);
  Trainer trainer(net, sgd_momentum(), nullptr);
  const std::string params_only = temp_path("params.safetensors");
  net->save_params(params_only);
  try {
    trainer.load_checkpoint(params_only);
    FAIL() << "a parameter file was taken for a checkpoint";
  } catch (const core::Error& e) {
    EXPECT_EQ(e.code(), core::ErrorCode::kIo);
  }
  auto loader = small_loader();
  loader->start_epoch(0);
  data::Batch batch;
  ASSERT_TRUE(loader->next(batch));
  trainer.train_batch(batch.images, batch.labels);
  const std::string checkpoint = temp_path("late.safetensors");
  trainer.save_checkpoint(checkpoint);
  try {
    trainer.load_checkpoint(checkpoint);
    FAIL() << "loaded a checkpoint after training started";
  } catch (const core::Error& e) {
    EXPECT_EQ(e.code(), core::ErrorCode::kBadState);
  }
  std::remove(params_only.c_str());
  std::remove(checkpoint.c_str());
}

// A local store whose pushes fail: the first step gets past initialising
// the store and no further.
class FailingPushStore : public kvstore::KVStore {
 public:
  std::string type() const override { return "failing-push"; }
  void init(const std::vector<kvstore::Key>& keys, const std::vector<NDArray>& values) override {
    local_->init(keys, values);
  }
  void push(const std::vector<kvstore::Key>&, const std::vector<NDArray>&, int) override {
    throw core::Error(core::ErrorCode::kNetwork, "push refused by the test");
  }
  void pull(const std::vector<kvstore::Key>& keys, const std::vector<NDArray>& outs, int priority) override {
    local_->pull(keys, outs, priority);
  }
  void set_optimizer(const optim::OptimizerConfig& config) override { local_->set_optimizer(config); }
  bool has_optimizer() const override { return local_->has_optimizer(); }
  void set_learning_rate(double lr) override { local_->set_learning_rate(lr); }
  void set_rescale_grad(double rescale) override { local_->set_rescale_grad(rescale); }
  core::NamedArrays optimizer_state(const std::string& prefix) const override {
    return local_->optimizer_state(prefix);
  }
  void load_optimizer_state(const core::NamedArrays& arrays, const std::string& prefix) override {
    local_->load_optimizer_state(arrays, prefix);
  }

 private:
  std::unique_ptr<kvstore::KVStore> local_ = kvstore::create_kvstore("local");
};

// The first batch of epoch 0.
data::Batch first_batch(data::BatchLoader& loader) {
  loader.start_epoch(0);
  data::Batch batch;
  if (!loader.next(batch)) ADD_FAILURE() << "the loader has no batch";
  return batch;
}

void expect_checkpoint_load_refused(Trainer& trainer, const std::string& checkpoint) {
  try {
    trainer.load_checkpoint(checkpoint);
    ADD_FAILURE() << "loaded a checkpoint in state " << to_string(trainer.state());
  } catch (const core::Error& e) {
    EXPECT_EQ(e.code(), core::ErrorCode::kBadState) << e.what();
  }
}

TEST_F(TrainerTest, WithoutAStoreTheFirstStepGoesFromFreshToStepped) {
  Trainer trainer(lenet(1), sgd_momentum(), nullptr);
  EXPECT_EQ(trainer.state(), TrainingPhase::State::kFresh);
  const std::string checkpoint = temp_path("fresh.safetensors");
  trainer.save_checkpoint(checkpoint);
  trainer.load_checkpoint(checkpoint);  // allowed while fresh
  EXPECT_EQ(trainer.state(), TrainingPhase::State::kFresh);
  // A refused step changes nothing.
  EXPECT_THROW(trainer.step(0), core::Error);
  EXPECT_EQ(trainer.state(), TrainingPhase::State::kFresh);
  auto loader = small_loader();
  const data::Batch batch = first_batch(*loader);
  trainer.train_batch(batch.images, batch.labels);
  EXPECT_EQ(trainer.state(), TrainingPhase::State::kStepped);
  expect_checkpoint_load_refused(trainer, checkpoint);
  trainer.train_batch(batch.images, batch.labels);
  EXPECT_EQ(trainer.state(), TrainingPhase::State::kStepped);
  std::remove(checkpoint.c_str());
}

TEST_F(TrainerTest, WithAStoreTheFirstStepPassesThroughStoreInitialized) {
  const std::string checkpoint = temp_path("store.safetensors");
  Trainer(lenet(1), sgd_momentum(), nullptr).save_checkpoint(checkpoint);
  auto loader = small_loader();
  const data::Batch batch = first_batch(*loader);

  // A first step that fails after initialising the store stays there, and
  // the store's weights may no longer be replaced on one side only.
  Trainer failing(lenet(1), sgd_momentum(), std::make_shared<FailingPushStore>());
  EXPECT_EQ(failing.state(), TrainingPhase::State::kFresh);
  failing.load_checkpoint(checkpoint);
  EXPECT_THROW(failing.train_batch(batch.images, batch.labels), core::Error);
  EXPECT_EQ(failing.state(), TrainingPhase::State::kStoreInitialized);
  expect_checkpoint_load_refused(failing, checkpoint);
  // Later steps use the initialised store as it is.
  EXPECT_THROW(failing.train_batch(batch.images, batch.labels), core::Error);
  EXPECT_EQ(failing.state(), TrainingPhase::State::kStoreInitialized);

  Trainer trainer(lenet(1), sgd_momentum(), kvstore::create_kvstore("local"));
  trainer.train_batch(batch.images, batch.labels);
  EXPECT_EQ(trainer.state(), TrainingPhase::State::kStepped);
  expect_checkpoint_load_refused(trainer, checkpoint);
  std::remove(checkpoint.c_str());
}

TEST_F(TrainerTest, EvaluationUsesTheNetsLoss) {
  auto net = lenet(1);
  Trainer trainer(net, sgd_momentum(), nullptr);
  auto loader = small_loader();
  const EvalResult result = trainer.evaluate(*loader);
  // The same epoch by hand: the net's (summed) loss per batch, averaged per sample.
  loader->start_epoch(0);
  data::Batch batch;
  double loss_sum = 0.0;
  int64_t samples = 0;
  while (loader->next(batch)) {
    net->forward({batch.images}, false);
    loss_sum += net->loss(batch.labels);
    samples += batch.size();
  }
  ASSERT_GT(samples, 0);
  EXPECT_NEAR(result.loss, loss_sum / static_cast<double>(samples), 1e-9);
  EXPECT_GT(result.loss, 0.0);
}

}  // namespace
}  // namespace dt::train
