// Gradient compression in the "allreduce" kvstore: compressed buckets equal
// a one-process simulation of the arithmetic for every mode, and the
// settings must agree across workers and come before the first push.
#include <gtest/gtest.h>

#include "host_allreduce_kvstore_test_util.h"

namespace dt::kvstore {
namespace {

using namespace host_allreduce_test;

// Worker w's gradient of the fused bucket (keys 1 and 2 back to back) in
// round `round`: values around the 2bit threshold, some large.
std::vector<float> bucket_gradient(int worker, int round, size_t n) {
  std::vector<float> g(n);
  std::mt19937 gen(static_cast<uint32_t>(worker * 1000 + round));
  std::normal_distribution<float> dist(0.0f, 0.6f);
  for (float& x : g) x = dist(gen);
  return g;
}

// The compressed all-reduce done by hand: each worker compensates with its
// residual, encodes, keeps what was not sent; every worker decodes the
// encodings and adds them in rank order.
std::vector<float> simulated_compressed_sum(const std::string& spec, int workers, int rounds, size_t n) {
  const auto config = ps::compression::CompressionConfig::parse(spec);
  const ps::compression::GradientCodec codec(config);
  std::vector<ps::compression::ErrorFeedback> feedback(static_cast<size_t>(workers));
  std::vector<float> sum;
  for (int round = 0; round < rounds; ++round) {
    sum.assign(n, 0.0f);
    for (int w = 0; w < workers; ++w) {
      std::vector<float> c = bucket_gradient(w, round, n);
      if (config.error_feedback) feedback[static_cast<size_t>(w)].compensate(7, 0, c.data(), n);
      std::vector<uint8_t> bytes(codec.max_encoded_size(n));
      bytes.resize(codec.encode(c.data(), n, bytes.data(), bytes.size()));
      if (config.error_feedback) {
        feedback[static_cast<size_t>(w)].update(7, 0, c.data(), n, codec, bytes.data(), bytes.size());
      }
      codec.decode_add(bytes.data(), bytes.size(), sum.data(), n);
    }
  }
  return sum;
}

TEST(HostAllreduceKVStore, CompressedBucketsEqualTheSimulatedArithmeticForEveryMode) {
  static constexpr size_t kSmall = 1000, kBig = 3000;
  static constexpr int kRounds = 3;
  for (const std::string spec : {"fp16", "bf16", "2bit:threshold=0.5", "1bit:threshold=0.25",
                                 "threshold:threshold=0.8", "topk:fraction=0.05",
                                 "topk:fraction=0.05,error_feedback=off"}) {
    SCOPED_TRACE(spec);
    std::vector<std::vector<float>> results(2);
    std::vector<core::Traffic> traffic(2);
    run_workers(2, [&](const test::ThreadedJob& job, int rank) {
      HostAllreduceKVStore kv(job.worker(rank), job.options());
      kv.init({1, 2}, {floats(std::vector<float>(kSmall, 0.0f)), floats(std::vector<float>(kBig, 0.0f))});
      kv.set_gradient_compression(spec);
      NDArray a, b;
      const core::Traffic before = kv.traffic();
      for (int round = 0; round < kRounds; ++round) {
        const std::vector<float> g = bucket_gradient(rank, round, kSmall + kBig);
        a = floats(std::vector<float>(g.begin(), g.begin() + kSmall));
        b = floats(std::vector<float>(g.begin() + kSmall, g.end()));
        kv.pushpull({1, 2}, {a, b}, {a, b}, 0);
      }
      traffic[static_cast<size_t>(rank)] = kv.traffic() - before;
      auto& out = results[static_cast<size_t>(rank)];
      out = values_of(a);
      const auto tail = values_of(b);
      out.insert(out.end(), tail.begin(), tail.end());
    });
    EXPECT_EQ(results[0], results[1]) << "the workers hold different sums";
    // The feedback key is the bucket's tag in the store and 7 here: a label.
    EXPECT_EQ(results[0], simulated_compressed_sum(spec, 2, kRounds, kSmall + kBig));
    // Less than the full gradient per round (what the ring would send), 2bit
    // far less.
    EXPECT_LT(traffic[0].bytes_sent, kRounds * (kSmall + kBig) * sizeof(float)) << traffic[0].bytes_sent;
    if (spec.rfind("2bit", 0) == 0) {
      EXPECT_LT(traffic[0].bytes_sent, kRounds * (kSmall + kBig) * sizeof(float) / 10) << traffic[0].bytes_sent;
    }
  }
}

TEST(HostAllreduceKVStore, CompressionMustBeTheSameOnEveryWorkerAndSetBeforePushing) {
  test::ThreadedJob job(0, 2);
  std::vector<std::future<std::pair<core::ErrorCode, core::ErrorCode>>> threads;
  for (int rank = 0; rank < 2; ++rank) {
    threads.push_back(std::async(std::launch::async, [&job, rank] {
      HostAllreduceKVStore kv(job.worker(rank), job.options());
      kv.init({1}, {floats({0, 0})});
      core::ErrorCode mismatch = core::ErrorCode::kInternal, late = core::ErrorCode::kInternal;
      try {
        kv.set_gradient_compression(rank == 0 ? "2bit:threshold=0.5" : "fp16");
      } catch (const core::Error& e) {
        mismatch = e.code();
      }
      kv.set_gradient_compression("fp16");  // agreed now
      NDArray v = floats({1, 1});
      kv.pushpull({1}, {v}, {v}, 0);
      EXPECT_EQ(values_of(v), (std::vector<float>{2, 2}));
      try {
        kv.set_gradient_compression("fp16");
      } catch (const core::Error& e) {
        late = e.code();
      }
      return std::make_pair(mismatch, late);
    }));
  }
  for (auto& t : threads) ASSERT_EQ(t.wait_for(std::chrono::seconds(60)), std::future_status::ready) << "hung";
  for (auto& t : threads) {
    const auto [mismatch, late] = t.get();
    EXPECT_EQ(mismatch, core::ErrorCode::kInvalidArgument);
    EXPECT_EQ(late, core::ErrorCode::kBadState);
  }
}

}  // namespace
}  // namespace dt::kvstore
