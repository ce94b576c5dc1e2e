// Gradient compression through a dist_sync job on threads: pushes and pulls
// equal a one-process simulation of the arithmetic, resent pulls stay exact,
// the traffic shrinks and the settings must agree across workers.
#include <gtest/gtest.h>

#include "dist_kvstore_test_util.h"

namespace dt::ps {
namespace {

using namespace dist_kvstore_test;

// One process doing a 2-worker dist_sync job's arithmetic on one key part
// [begin, end) of n elements: per worker, the gradient plus its residual
// encoded and decoded; the server's rank-order sum; without an optimizer,
// that sum plus the server's residual encoded once per round and decoded by
// the workers (with one, the optimizer's update of the weights, pulled in
// full).
class SimulatedPart {
 public:
  SimulatedPart(const std::string& spec, uint64_t key, int64_t begin, int64_t end)
      : config_(ps::compression::CompressionConfig::parse(spec)), codec_(config_), key_(key), begin_(begin),
        n_(static_cast<size_t>(end - begin)) {}

  // Round `round`'s pushes of the key whose gradients gradient() gives
  // (this part's elements of them), summed in rank order.
  std::vector<float> pushed_sum(int round, size_t key_size) {
    std::vector<float> sum(n_, 0.0f);
    for (int w = 0; w < 2; ++w) {
      const std::vector<float> g = gradient(w, key_, round, key_size);
      std::vector<float> c(g.begin() + begin_, g.begin() + begin_ + static_cast<int64_t>(n_));
      const std::vector<float> decoded = round_trip(c, worker_feedback_[w]);
      // The server copies rank 0's value and adds rank 1's.
      for (size_t i = 0; i < n_; ++i) sum[i] = w == 0 ? decoded[i] : sum[i] + decoded[i];
    }
    return sum;
  }
  // What the workers pull of a round's sum (the server encodes it once).
  std::vector<float> pulled(std::vector<float> sum) { return round_trip(sum, server_feedback_); }

 private:
  // c compensated (when the mode has error feedback), encoded, the residual
  // updated, and what the receiver decodes.
  std::vector<float> round_trip(std::vector<float>& c, ps::compression::ErrorFeedback& feedback) const {
    if (config_.error_feedback) feedback.compensate(key_, begin_, c.data(), n_);
    std::vector<uint8_t> bytes(codec_.max_encoded_size(n_));
    bytes.resize(codec_.encode(c.data(), n_, bytes.data(), bytes.size()));
    if (config_.error_feedback) feedback.update(key_, begin_, c.data(), n_, codec_, bytes.data(), bytes.size());
    std::vector<float> decoded(n_, 0.0f);
    codec_.decode_add(bytes.data(), bytes.size(), decoded.data(), n_);
    return decoded;
  }

  ps::compression::CompressionConfig config_;
  ps::compression::GradientCodec codec_;
  uint64_t key_;
  int64_t begin_;
  size_t n_;
  ps::compression::ErrorFeedback worker_feedback_[2];
  ps::compression::ErrorFeedback server_feedback_;
};

// The keys of the compression tests, in init order: key 1 stays whole on one
// server, key 2 (12 KB > the 4 KB bound) is split across both, keys 3..6
// are small enough to travel fused with others.
const std::vector<std::pair<uint64_t, size_t>> kCompressedKeys = {{1, 1000}, {2, 3000}, {3, 10},
                                                                  {4, 24},   {5, 7},    {6, 40}};

// What every worker of a 2-worker, 2-server dist_sync job pulls after
// `rounds` rounds of pushing and pulling every key of kCompressedKeys, keys
// placed as the workers place them and each part simulated on its own.
std::map<uint64_t, std::vector<float>> simulated_pulls(const std::string& spec, int rounds) {
  KeyPlacement placement(2, fast_options().bigarray_bound_bytes);
  std::map<uint64_t, std::vector<float>> out;
  for (const auto& [key, size] : kCompressedKeys) {
    std::vector<float>& pulled = out[key];
    pulled.assign(size, 0.0f);
    for (const PartRange& part : placement.place(key, static_cast<int64_t>(size), sizeof(float))) {
      SimulatedPart sim(spec, key, part.begin, part.end);
      for (int round = 1; round <= rounds; ++round) {
        const std::vector<float> got = sim.pulled(sim.pushed_sum(round, size));
        std::copy(got.begin(), got.end(), pulled.begin() + part.begin);
      }
    }
  }
  return out;
}

// Workers 0 and 1 of `job` each push and pull every key of kCompressedKeys
// for `rounds` rounds (one call per round, so small keys share messages)
// and return what they pulled last. before_push(rank, round) runs first in
// each round.
std::pair<std::map<uint64_t, std::vector<float>>, std::map<uint64_t, std::vector<float>>> run_compressed(
    const InprocJob& job, const std::string& spec, int rounds, const std::function<void(int, int)>& before_push = {}) {
  return on_two_workers([&](int rank) {
    auto kv = job.worker("dist_sync", rank);
    std::vector<kvstore::Key> keys;
    std::vector<NDArray> outs;
    for (const auto& [key, size] : kCompressedKeys) {
      keys.push_back(key);
      outs.push_back(array(std::vector<float>(size, 0.0f)));
    }
    kv->init(keys, outs);
    kv->set_gradient_compression(spec);
    for (int round = 1; round <= rounds; ++round) {
      if (before_push) before_push(rank, round);
      std::vector<NDArray> grads;
      for (const auto& [key, size] : kCompressedKeys) grads.push_back(array(gradient(rank, key, round, size)));
      kv->push(keys, grads, 0);
      kv->pull(keys, outs, 0);
    }
    std::map<uint64_t, std::vector<float>> pulled;
    for (size_t i = 0; i < keys.size(); ++i) pulled[keys[i]] = values(outs[i]);
    return pulled;
  });
}

TEST(PsDataInproc, CompressedPushesAndPullsEqualTheSimulatedArithmeticForEveryMode) {
  // The workers run the optimizer (no set_optimizer): each round's sum comes
  // back encoded by its server, with the server's own residual.
  constexpr int kRounds = 3;
  for (const std::string spec :
       {"fp16", "fp16:error_feedback=off", "bf16", "2bit:threshold=0.5", "2bit:threshold=0.5,error_feedback=off",
        "1bit:threshold=0.25", "threshold:threshold=0.8", "topk:fraction=0.05",
        "topk:fraction=0.05,error_feedback=off"}) {
    SCOPED_TRACE(spec);
    InprocJob job("compress-" + std::to_string(std::hash<std::string>()(spec)), 2, 2);
    const auto [a, b] = run_compressed(job, spec, kRounds);
    const auto expected = simulated_pulls(spec, kRounds);
    for (const auto& [key, size] : kCompressedKeys) EXPECT_EQ(a.at(key), expected.at(key)) << "key " << key;
    EXPECT_EQ(a, b) << "the workers pulled different values";
    for (const auto& outcome : job.outcomes()) EXPECT_EQ(outcome, "");
  }
}

TEST(PsDataInproc, CompressedPullsThatAreResentStayExact) {
  // PS_RESEND with a 10 ms patience, and worker 1 50 ms late to every
  // round: worker 0's pulls wait and are sent again, several times a
  // round; each copy gets the round's one encoding, never a second
  // residual update.
  PsOptions options = fast_options();
  options.resend_timeout_s = 0.01;
  const std::string spec = "2bit:threshold=0.5";
  InprocJob job("compress-resend", 2, 2, options);
  const auto [a, b] = run_compressed(job, spec, 3, [](int rank, int) {
    if (rank == 1) std::this_thread::sleep_for(50ms);
  });
  const auto expected = simulated_pulls(spec, 3);
  for (const auto& [key, size] : kCompressedKeys) EXPECT_EQ(a.at(key), expected.at(key)) << "key " << key;
  EXPECT_EQ(a, b);
  for (const auto& outcome : job.outcomes()) EXPECT_EQ(outcome, "");
}

TEST(PsDataInproc, WithTheOptimizerOnTheServersPulledWeightsAreExact) {
  // Pushes compressed, the servers' SGD applied to their rank-order sum,
  // and the weights pulled in full: the same as one process doing it.
  const std::string spec = "2bit:threshold=0.5";
  const auto sgd_config = optim::OptimizerConfig("sgd").set("learning_rate", 0.1).set("wd", 0.0);
  constexpr size_t kCount = 3000;  // split across both servers
  constexpr int kRounds = 3;
  InprocJob job("compress-weights", 2, 2);
  const auto [a, b] = on_two_workers([&](int rank) {
    auto kv = job.worker("dist_sync", rank);
    kv->init({2}, {array(std::vector<float>(kCount, 1.0f))});
    kv->set_gradient_compression(spec);
    kv->set_optimizer(sgd_config);
    NDArray out = array(std::vector<float>(kCount, 0.0f));
    const core::Traffic before = kv->traffic();
    for (int round = 1; round <= kRounds; ++round) {
      kv->push({2}, {array(gradient(rank, 2, round, kCount))}, 0);
      kv->pull({2}, {out}, 0);
    }
    const core::Traffic t = kv->traffic() - before;
    EXPECT_GT(t.bytes_received, kRounds * kCount * sizeof(float)) << "weights are pulled in full";
    return values(out);
  });
  NDArray weight = array(std::vector<float>(kCount, 1.0f));
  auto optimizer = optim::Optimizer::create(sgd_config);
  KeyPlacement placement(2, fast_options().bigarray_bound_bytes);
  std::vector<std::unique_ptr<SimulatedPart>> parts;
  for (const PartRange& part : placement.place(2, kCount, sizeof(float))) {
    parts.push_back(std::make_unique<SimulatedPart>(spec, 2, part.begin, part.end));
  }
  ASSERT_EQ(parts.size(), 2u);
  for (int round = 1; round <= kRounds; ++round) {
    std::vector<float> sum;
    for (const auto& part : parts) {
      const std::vector<float> s = part->pushed_sum(round, kCount);
      sum.insert(sum.end(), s.begin(), s.end());
    }
    optimizer->update(2, weight, array(sum));
  }
  EXPECT_EQ(a, values(weight));
  EXPECT_EQ(a, b);
  for (const auto& outcome : job.outcomes()) EXPECT_EQ(outcome, "");
}

TEST(PsDataInproc, TrafficCountsTheBytesCompressionSaves) {
  // 100000 float32 (400 KB) pushed 3 times and pulled once by one worker
  // that runs the optimizer itself: what it sends and what it receives
  // shrink about 2x with fp16 and about 16x with 2bit.
  constexpr size_t kCount = 100000;
  std::map<std::string, core::Traffic> seen;
  for (const std::string spec : {"none", "fp16", "2bit:threshold=0.5"}) {
    InprocJob job("traffic-" + std::to_string(std::hash<std::string>()(spec)), 1, 1);
    {
      auto kv = job.worker("dist_sync", 0);
      EXPECT_EQ(kv->traffic().bytes_sent, 0u);
      kv->init({1}, {array(std::vector<float>(kCount, 0.0f))});
      kv->set_gradient_compression(spec);
      const core::Traffic before = kv->traffic();
      for (int round = 1; round <= 3; ++round) kv->push({1}, {array(gradient(0, 1, round, kCount))}, 0);
      NDArray out = array(std::vector<float>(kCount, 0.0f));
      kv->pull({1}, {out}, 0);
      seen[spec] = kv->traffic() - before;
    }
    for (const auto& outcome : job.outcomes()) EXPECT_EQ(outcome, "");
  }
  const core::Traffic none = seen["none"], fp16 = seen["fp16"], twobit = seen["2bit:threshold=0.5"];
  EXPECT_GT(none.bytes_sent, 3 * kCount * sizeof(float));
  EXPECT_LT(none.bytes_sent, 3 * kCount * sizeof(float) + 64 * 1024);
  EXPECT_GT(none.bytes_received, kCount * sizeof(float));
  EXPECT_LT(none.bytes_received, kCount * sizeof(float) + 64 * 1024);
  EXPECT_NEAR(static_cast<double>(fp16.bytes_sent) / none.bytes_sent, 0.5, 0.02);
  EXPECT_LT(static_cast<double>(twobit.bytes_sent) / none.bytes_sent, 1.0 / 14);
  EXPECT_NEAR(static_cast<double>(fp16.bytes_received) / none.bytes_received, 0.5, 0.02);
  EXPECT_LT(static_cast<double>(twobit.bytes_received) / none.bytes_received, 1.0 / 14);
  EXPECT_EQ(kvstore::create_kvstore("local")->traffic().bytes_sent, 0u);
}

TEST(PsDataInproc, CompressionMustBeTheSameOnEveryWorkerAndSetBeforePushing) {
  InprocJob job("compress-rules", 1, 2);
  const auto [a, b] = on_two_workers([&](int rank) {
    auto kv = job.worker("dist_sync", rank);
    kv->init({1}, {array({0, 0})});
    // One of the two calls succeeds: no code_of here.
    std::optional<ErrorCode> mismatch;
    try {
      kv->set_gradient_compression(rank == 0 ? "2bit:threshold=0.5" : "fp16");
    } catch (const Error& e) {
      mismatch = e.code();
    }
    kv->barrier();
    kv->push({1}, {array({1, 1})}, 0);
    const ErrorCode late = code_of([&] { kv->set_gradient_compression("fp16"); });
    return std::make_pair(mismatch, late);
  });
  // Whichever worker came second was refused; setting after a push never works.
  EXPECT_NE(a.first.has_value(), b.first.has_value()) << "exactly one worker must be refused";
  EXPECT_EQ(a.first.value_or(b.first.value_or(ErrorCode::kInternal)), ErrorCode::kInvalidArgument);
  EXPECT_EQ(a.second, ErrorCode::kBadState);
  EXPECT_EQ(b.second, ErrorCode::kBadState);
  for (const auto& outcome : job.outcomes()) EXPECT_EQ(outcome, "");
  EXPECT_EQ(code_of([] { kvstore::create_kvstore("local")->set_gradient_compression("2bit"); }),
            ErrorCode::kNotSupported);
}


}  // namespace
}  // namespace dt::ps
