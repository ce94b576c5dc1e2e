// The "dist_nccl" kvstore on real GPUs, its workers being threads of this
// test in a job whose scheduler and server are threads too: the NCCL unique
// id goes through the scheduler (collective::nccl::join_job_communicator),
// init broadcasts worker 0's values, pushpull all-reduces (float32, and
// float16 on the wire, and under gradient compression), pull returns the
// last sum. One worker runs on any GPU; two workers (one GPU each) need two
// GPUs. Inputs are small integers, exact in float16 and in every order of
// summation.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "core/context.h"
#include "core/error.h"
#include "core/ndarray.h"
#include "kvstore/nccl/allreduce_kvstore.h"
#include "nccl_test_util.h"
#include "nn/model_builders.h"
#include "nn/net.h"
#include "optim/optimizer_config.h"
#include "ps/compression/compression_mode.h"
#include "ps/compression/gradient_codec.h"
#include "train/trainer.h"
#include "unit/ps/dist_device_arrays.h"
#include "unit/ps/dist_device_job.h"

namespace dt::kvstore {
namespace {

using core::DType;
using core::NDArray;

constexpr int64_t kCount = 2053;

using test::float_array;
using test::floats_of;
using test::gpu;

std::vector<float> plus(std::vector<float> a, const std::vector<float>& b) {
  for (size_t i = 0; i < a.size(); ++i) a[i] += b[i];
  return a;
}

AllreduceOptions options_for(int device, DType wire) {
  AllreduceOptions o;
  o.device = device;
  o.wire_dtype = wire;
  return o;
}

// Worker `rank` of `workers` on gpu(rank): checks init, pushpull and pull.
void exercise(const test::ThreadedJob& job, int rank, int workers, DType wire) {
  AllreduceKVStore kv(job.worker(rank), job.options(), options_for(rank, wire));
  EXPECT_EQ(kv.type(), "dist_nccl");
  EXPECT_EQ(kv.rank(), rank);
  EXPECT_EQ(kv.num_workers(), workers);
  const auto g = gpu(rank);
  // Each worker inits with its own values; worker 0's win everywhere.
  kv.init({3, 4}, {float_array(g, test::small_integers(rank, kCount)), float_array(core::make_cpu_context(), {1.0f + rank, 2.0f})});
  NDArray out = float_array(g, std::vector<float>(kCount, -1));
  NDArray small = float_array(core::make_cpu_context(), {0, 0});
  kv.pull({3, 4}, {out, small}, 0);
  EXPECT_EQ(floats_of(out), test::small_integers(0, kCount));
  EXPECT_EQ(floats_of(small), (std::vector<float>{1, 2}));

  std::vector<float> expected(kCount, 0.0f);
  for (int r = 0; r < workers; ++r) {
    expected = plus(expected, plus(test::small_integers(10 + r, kCount), test::small_integers(20 + r, kCount)));
  }
  for (int round = 0; round < 2; ++round) {
    // Two values of key 3 on this worker's GPU (the second under another
    // context), summed locally, then across workers, in place.
    NDArray a = float_array(g, test::small_integers(10 + rank, kCount));
    NDArray b = float_array(gpu(rank), test::small_integers(20 + rank, kCount));
    kv.pushpull({3, 3}, {a, b}, {a, b}, 0);
    EXPECT_EQ(floats_of(a), expected) << "round " << round;
    EXPECT_EQ(floats_of(b), expected) << "round " << round;
  }
  NDArray again = float_array(g, std::vector<float>(kCount, -1));
  kv.pull({3}, {again}, 0);
  EXPECT_EQ(floats_of(again), expected) << "pull returns the last sum";
  kv.barrier();
}

void run_job(int workers, DType wire) {
  test::ThreadedJob job(1, workers);
  std::vector<std::future<void>> threads;
  for (int rank = 0; rank < workers; ++rank) {
    threads.push_back(std::async(std::launch::async, [&job, rank, workers, wire] { exercise(job, rank, workers, wire); }));
  }
  for (auto& t : threads) ASSERT_EQ(t.wait_for(std::chrono::seconds(120)), std::future_status::ready) << "a worker hung";
  for (auto& t : threads) t.get();
  for (const auto& outcome : job.outcomes()) EXPECT_EQ(outcome, "");
}

TEST(AllreduceKVStore, OneWorkerJoinsThroughTheSchedulerAndReduces) { run_job(1, DType::kFloat32); }

TEST(AllreduceKVStore, OneWorkerReducesInFloat16OnTheWire) { run_job(1, DType::kFloat16); }

TEST(AllreduceKVStore, TwoWorkersOnTwoGpusSumAndStartFromWorkerZero) {
  if (core::gpu_count() < 2) {
    GTEST_SKIP() << "two workers need a GPU each; " << core::gpu_count() << " visible";
  }
  run_job(2, DType::kFloat32);
  run_job(2, DType::kFloat16);
}

TEST(AllreduceKVStore, RunsNoOptimizerAndTrainersUpdateOnTheWorkers) {
  test::ThreadedJob job(1, 1);
  {
    auto kv = std::make_shared<AllreduceKVStore>(job.worker(0), job.options(), options_for(0, DType::kFloat32));
    EXPECT_FALSE(kv->accepts_optimizer());
    try {
      kv->set_optimizer(optim::OptimizerConfig("sgd").set("learning_rate", 0.1));
      ADD_FAILURE() << "set_optimizer worked";
    } catch (const core::Error& e) {
      EXPECT_EQ(e.code(), core::ErrorCode::kNotSupported);
      EXPECT_NE(std::string(e.what()).find("on the workers"), std::string::npos) << e.what();
    }
    auto net = std::make_shared<nn::Net>(nn::build_model_description_from_text("mlp", R"({"hidden": [8]})"), gpu(0));
    train::Trainer trainer(net, optim::OptimizerConfig("sgd").set("learning_rate", 0.1), kv);
    EXPECT_FALSE(trainer.update_on_kvstore());
  }
  for (const auto& outcome : job.outcomes()) EXPECT_EQ(outcome, "");
}

// Issue 16: "fp16"/"bf16" compression on dist_nccl is a cast around the
// all-reduce; with error feedback what the cast lost goes into the next
// push. One worker: the all-reduce is the identity, so the results are the
// host's own conversions, exactly.
TEST(AllreduceKVStore, Fp16AndBf16CompressionCastWithErrorFeedback) {
  for (const std::string spec : {"fp16", "bf16", "fp16:error_feedback=off"}) {
    const bool bf16 = spec == "bf16";
    const bool feedback = spec.find("off") == std::string::npos;
    const auto round_trip = [bf16](float v) {
      return bf16 ? core::bfloat16_to_float(core::float_to_bfloat16(v)) : core::half_to_float(core::float_to_half(v));
    };
    test::ThreadedJob job(1, 1);
    {
      AllreduceKVStore kv(job.worker(0), job.options(), options_for(0, DType::kFloat32));
      kv.set_gradient_compression(spec);
      EXPECT_EQ(kv.gradient_compression(), ps::compression::CompressionConfig::parse(spec).to_string());
      // 1 + 2^-11 is half a float16 step above 1, 1 + 2^-8 half a bfloat16
      // step: each rounds (to even) down to 1, and the residual of the first
      // push lifts the second to the next step up only with error feedback.
      const float half_step16 = 1.0f / 2048, half_step_b16 = 1.0f / 256;
      const std::vector<float> g1 = {1.0f + half_step16, 1.0f + half_step_b16, 1.0f / 3, -2.5f};
      const std::vector<float> g2 = {1.0f + half_step16, 1.0f + half_step_b16, 1.0f / 3, 0.0f};
      kv.init({5}, {float_array(gpu(0), {0, 0, 0, 0})});
      NDArray a = float_array(gpu(0), g1);
      kv.pushpull({5}, {a}, {a}, 0);
      std::vector<float> sent1, expected2;
      for (size_t i = 0; i < g1.size(); ++i) sent1.push_back(round_trip(g1[i]));
      EXPECT_EQ(floats_of(a), sent1) << spec;
      for (size_t i = 0; i < g2.size(); ++i) {
        const float residual = feedback ? g1[i] - sent1[i] : 0.0f;
        expected2.push_back(round_trip(g2[i] + residual));
      }
      NDArray b = float_array(gpu(0), g2);
      kv.pushpull({5}, {b}, {b}, 0);
      EXPECT_EQ(floats_of(b), expected2) << spec << ": the second push carries what the first cast lost";
      try {
        kv.set_gradient_compression("none");
        ADD_FAILURE() << "compression changed after a push";
      } catch (const core::Error& e) {
        EXPECT_EQ(e.code(), core::ErrorCode::kBadState);
      }
    }
    for (const auto& outcome : job.outcomes()) EXPECT_EQ(outcome, "");
  }
}

// Issue 16: "2bit", "1bit", "topk" and "threshold" on dist_nccl encode each
// float32 key on the host with the worker's error feedback and all-gather
// the encodings over NCCL. One worker: the all-gather hands back its own
// bytes, so a pushpull gives exactly what the codec's encode and
// decode_add give here, and the second push sends gradient + what the
// first did not send.
TEST(AllreduceKVStore, CodecCompressionIsTheHostCodecWithErrorFeedback) {
  constexpr size_t kValues = 1000;  // not a multiple of 2bit's 16 or 1bit's 32 values per word
  std::vector<float> g1(kValues), g2(kValues);
  for (size_t i = 0; i < kValues; ++i) {
    g1[i] = static_cast<float>(static_cast<int>(i * 7 % 23) - 11) / 8.0f;
    g2[i] = static_cast<float>(static_cast<int>((i * 5 + 3) % 19) - 9) / 8.0f;
  }
  for (const std::string spec : {"2bit:threshold=0.5", "1bit:threshold=0.25", "topk:fraction=0.1",
                                 "threshold:threshold=0.6", "2bit:threshold=0.5,error_feedback=off"}) {
    SCOPED_TRACE(spec);
    const auto config = ps::compression::CompressionConfig::parse(spec);
    const ps::compression::GradientCodec codec(config);
    const auto through_codec = [&codec](const std::vector<float>& values) {
      std::vector<uint8_t> bytes(codec.max_encoded_size(values.size()));
      bytes.resize(codec.encode(values.data(), values.size(), bytes.data(), bytes.size()));
      std::vector<float> decoded(values.size(), 0.0f);
      codec.decode_add(bytes.data(), bytes.size(), decoded.data(), decoded.size());
      return decoded;
    };
    test::ThreadedJob job(1, 1);
    {
      AllreduceKVStore kv(job.worker(0), job.options(), options_for(0, DType::kFloat32));
      kv.set_gradient_compression(spec);
      EXPECT_EQ(kv.gradient_compression(), config.to_string());
      kv.init({5}, {float_array(gpu(0), std::vector<float>(kValues, 0.0f))});
      NDArray a = float_array(gpu(0), g1);
      kv.pushpull({5}, {a}, {a}, 0);
      const std::vector<float> sent1 = through_codec(g1);
      EXPECT_EQ(floats_of(a), sent1);
      std::vector<float> compensated = g2;
      if (config.error_feedback) {
        for (size_t i = 0; i < kValues; ++i) compensated[i] += g1[i] - sent1[i];
      }
      NDArray b = float_array(gpu(0), g2);
      kv.pushpull({5}, {b}, {b}, 0);
      const std::vector<float> sent2 = through_codec(compensated);
      EXPECT_EQ(floats_of(b), sent2) << "the second push carries what the first did not send";
      NDArray pulled = float_array(gpu(0), std::vector<float>(kValues, -1.0f));
      kv.pull({5}, {pulled}, 0);
      EXPECT_EQ(floats_of(pulled), sent2) << "pull returns the last sum";
    }
    for (const auto& outcome : job.outcomes()) EXPECT_EQ(outcome, "");
  }
}

TEST(AllreduceKVStore, BadArgumentsAreErrors) {
  test::ThreadedJob job(1, 1);
  {
    AllreduceKVStore kv(job.worker(0), job.options(), options_for(0, DType::kFloat32));
    kv.init({1}, {float_array(gpu(0), {1, 2, 3})});
    NDArray wrong = float_array(gpu(0), {1, 2});
    try {
      kv.push({1}, {wrong}, 0);
      ADD_FAILURE() << "a push of the wrong shape worked";
    } catch (const core::Error& e) {
      EXPECT_EQ(e.code(), core::ErrorCode::kShapeMismatch);
    }
    try {
      kv.pull({2}, {wrong}, 0);
      ADD_FAILURE() << "a pull of an unknown key worked";
    } catch (const core::Error& e) {
      EXPECT_EQ(e.code(), core::ErrorCode::kNotFound);
    }
  }
  for (const auto& outcome : job.outcomes()) EXPECT_EQ(outcome, "");
}

}  // namespace
}  // namespace dt::kvstore
