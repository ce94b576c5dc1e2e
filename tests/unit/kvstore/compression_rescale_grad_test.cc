// The trainer's rescale_grad reaches the compression of a real store
// (issue 42): the spec is set again with the scale of batch sums, the
// servers adopt it from every worker, and the codecs use it.
#include <gtest/gtest.h>

#include <cmath>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "core/context.h"
#include "core/ndarray.h"
#include "kvstore/dist_kvstore.h"
#include "kvstore/host/host_allreduce_kvstore.h"
#include "nn/model_builders.h"
#include "nn/net.h"
#include "optim/optimizer_config.h"
#include "train/trainer.h"
#include "unit/ps/dist_device_job.h"

namespace dt::kvstore {
namespace {

using core::DType;
using core::NDArray;
using core::Shape;

NDArray array(const std::vector<float>& v) {
  NDArray a = NDArray::empty(core::make_cpu_context(), DType::kFloat32, Shape({static_cast<int64_t>(v.size())}));
  a.copy_from_host(v.data(), v.size() * sizeof(float));
  return a;
}

std::vector<float> values(const NDArray& a) {
  std::vector<float> v(static_cast<size_t>(a.size()));
  a.copy_to_host(v.data(), v.size() * sizeof(float));
  return v;
}

TEST(CompressionRescaleGrad, DistSyncWorkersAndServersUseTheScaleOfBatchSums) {
  test::ThreadedJob job(1, 2);
  const auto worker = [&](int rank) {
    auto kv = std::make_shared<DistKVStore>("dist_sync", job.worker(rank), job.options());
    kv->set_gradient_compression("2bit");
    kv->init({1}, {array({0, 0, 0, 0})});
    // Batches of 64: scale 1/8, MXNet's 0.5 is 4 on the raw sums.
    kv->set_compression_rescale_grad(1.0 / 64);
    EXPECT_EQ(kv->gradient_compression(), "2bit:threshold=0.5,gradient_scale=0.125,error_feedback=on");
    // A second word changes nothing: the scale is named.
    kv->set_compression_rescale_grad(1.0 / 16);
    EXPECT_EQ(kv->gradient_compression(), "2bit:threshold=0.5,gradient_scale=0.125,error_feedback=on");
    NDArray out = array({0, 0, 0, 0});
    kv->pushpull({1}, {array({3.0f, 5.0f, -4.5f, 0.25f})}, {out}, 0);
    return values(out);
  };
  auto a = std::async(std::launch::async, worker, 0);
  auto b = std::async(std::launch::async, worker, 1);
  // Raw threshold 4, not 0.5: of each worker's values, 5 and -4.5 cross
  // it and go as +-their mean 4.75, so each sends {0, 4.75, -4.75, 0}; the
  // server sums {0, 9.5, -9.5, 0} and, the workers running the optimizer,
  // sends the sum in 2bit with the same threshold, where both cross: as is.
  // (At 0.5 on the raw sums 3 and 0.25 would go too.)
  const std::vector<float> expected = {0.0f, 9.5f, -9.5f, 0.0f};
  EXPECT_EQ(a.get(), expected);
  EXPECT_EQ(b.get(), expected);
  for (const auto& outcome : job.outcomes()) EXPECT_EQ(outcome, "");
}

TEST(CompressionRescaleGrad, TheTrainerNamesItBeforeItsFirstPush) {
  test::ThreadedJob job(0, 1);
  {
    auto kv = std::make_shared<HostAllreduceKVStore>(job.worker(0), job.options());
    kv->set_gradient_compression("1bit");
    auto net = std::make_shared<nn::Net>(
        nn::build_model_description_from_text("mlp", R"({"input_shape": [4], "hidden": [3], "classes": 2})"),
        core::make_cpu_context());
    net->initialize(3);
    train::Trainer trainer(net, optim::OptimizerConfig("sgd").set("learning_rate", 0.1), kv);
    NDArray x = NDArray::empty(core::make_cpu_context(), DType::kFloat32, Shape({16, 4}));
    NDArray y = NDArray::empty(core::make_cpu_context(), DType::kInt32, Shape({16}));
    for (int64_t i = 0; i < 16; ++i) {
      for (int64_t j = 0; j < 4; ++j) x.data_as<float>()[i * 4 + j] = std::sin(float(i + j));
      y.data_as<int32_t>()[i] = static_cast<int32_t>(i % 2);
    }
    trainer.train_batch(x, y);
    // A batch of 16: rescale_grad 1/16, gradient_scale 1/4.
    EXPECT_EQ(kv->gradient_compression(), "1bit:threshold=0.5,gradient_scale=0.25,error_feedback=on");
  }
  for (const auto& outcome : job.outcomes()) EXPECT_EQ(outcome, "");
}

}  // namespace
}  // namespace dt::kvstore
