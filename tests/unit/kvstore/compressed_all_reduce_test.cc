// The compressed all-reduce that the all-reduce stores share, with three
// ranks as threads of this test exchanging their bytes through memory: the
// results must equal the arithmetic done here by hand with the codec alone
// (rank order, residuals per rank and tag carried to the next call), and
// bytes from one rank that do not decode must be an error naming it.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <future>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "kvstore/compressed_all_reduce.h"
#include "ps/compression/compression_mode.h"
#include "ps/compression/gradient_codec.h"

namespace dt::kvstore {
namespace {

using ps::compression::CompressionConfig;
using ps::compression::GradientCodec;

constexpr size_t kRanks = 3;
constexpr size_t kCount = 37;  // not a multiple of 2bit's 16 or 1bit's 32 values per word
constexpr int kRounds = 3;
constexpr uint64_t kTags[] = {7, 8};
constexpr auto kDeadline = std::chrono::seconds(30);

// An all-gather among the threads of this test: each rank leaves its bytes,
// and once every rank has, each gets all of them. Reusable call after call
// (a rank cannot leave bytes for the next call before every rank has
// collected this one's, since that call needs every rank). A rank that
// waits past kDeadline gets Error(kTimedOut).
class ThreadExchange {
 public:
  std::vector<std::vector<uint8_t>> all_gather(size_t rank, const uint8_t* data, size_t size) {
    std::unique_lock<std::mutex> lock(mutex_);
    slots_[rank].assign(data, data + size);
    const uint64_t call = calls_;
    if (++arrived_ == kRanks) {
      gathered_ = slots_;
      arrived_ = 0;
      ++calls_;
      done_.notify_all();
    } else if (!done_.wait_for(lock, kDeadline, [&] { return calls_ != call; })) {
      throw core::Error(core::ErrorCode::kTimedOut, "rank " + std::to_string(rank) + ": the others never came");
    }
    return gathered_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable done_;
  std::vector<std::vector<uint8_t>> slots_ = std::vector<std::vector<uint8_t>>(kRanks);
  std::vector<std::vector<uint8_t>> gathered_;
  size_t arrived_ = 0;
  uint64_t calls_ = 0;
};

// Rank r's gradient under tag in round `round`: values on both sides of
// the thresholds used below, different for every argument, and not
// multiples of a power of two, so that sums taken in another order than
// rank order round differently.
std::vector<float> gradient(size_t rank, uint64_t tag, int round) {
  std::vector<float> g(kCount);
  for (size_t i = 0; i < kCount; ++i) {
    const auto k = static_cast<int>(i * 5 + rank * 11 + tag * 3 + static_cast<uint64_t>(round) * 17);
    g[i] = static_cast<float>(k % 29 - 14) / (10.0f + static_cast<float>(rank));
  }
  return g;
}

// What the codec alone makes of values: its encoding decoded.
std::vector<float> sent(const GradientCodec& codec, const std::vector<float>& values, std::vector<uint8_t>& bytes) {
  bytes.resize(codec.max_encoded_size(values.size()));
  bytes.resize(codec.encode(values.data(), values.size(), bytes.data(), bytes.size()));
  std::vector<float> decoded(values.size(), 0.0f);
  codec.decode_add(bytes.data(), bytes.size(), decoded.data(), decoded.size());
  return decoded;
}

// expected[round][tag] = the rank-order sum, by hand: each rank sends
// gradient + its residual for the tag (when error feedback is on) and keeps
// what was not sent.
std::vector<std::map<uint64_t, std::vector<float>>> by_hand(const CompressionConfig& config) {
  const GradientCodec codec(config);
  std::map<std::pair<size_t, uint64_t>, std::vector<float>> residual;
  std::vector<std::map<uint64_t, std::vector<float>>> expected(kRounds);
  for (int round = 0; round < kRounds; ++round) {
    for (uint64_t tag : kTags) {
      std::vector<float> sum(kCount, 0.0f);
      for (size_t r = 0; r < kRanks; ++r) {
        std::vector<float> c = gradient(r, tag, round);
        std::vector<float>& left = residual[{r, tag}];
        left.resize(kCount, 0.0f);
        if (config.error_feedback) {
          for (size_t i = 0; i < kCount; ++i) c[i] += left[i];
        }
        std::vector<uint8_t> bytes;
        const std::vector<float> decoded = sent(codec, c, bytes);
        for (size_t i = 0; i < kCount; ++i) left[i] = c[i] - decoded[i];
        codec.decode_add(bytes.data(), bytes.size(), sum.data(), kCount);
      }
      expected[static_cast<size_t>(round)][tag] = sum;
    }
  }
  return expected;
}

TEST(CompressedAllReduce, EveryRankGetsTheRankOrderSumWithResidualsCarriedPerTag) {
  // The wide topk and the low threshold send most values of every rank, so
  // that three ranks add at most positions (where the order shows).
  for (const std::string spec : {"2bit:threshold=0.5", "1bit:threshold=0.25", "topk:fraction=0.2", "topk:fraction=0.7",
                                 "threshold:threshold=0.7", "threshold:threshold=0.25",
                                 "topk:fraction=0.2,error_feedback=off"}) {
    SCOPED_TRACE(spec);
    const CompressionConfig config = CompressionConfig::parse(spec);
    const auto expected = by_hand(config);
    ThreadExchange exchange;
    // results[rank][round][tag]
    std::vector<std::vector<std::map<uint64_t, std::vector<float>>>> results(kRanks);
    std::vector<std::future<void>> threads;
    for (size_t rank = 0; rank < kRanks; ++rank) {
      threads.push_back(std::async(std::launch::async, [&, rank] {
        CompressedAllReduce compressed("test-store", config);
        const AllGatherBytes all_gather = [&exchange, rank](const uint8_t* data, size_t size) {
          return exchange.all_gather(rank, data, size);
        };
        for (int round = 0; round < kRounds; ++round) {
          results[rank].emplace_back();
          for (uint64_t tag : kTags) {
            std::vector<float> values = gradient(rank, tag, round);
            compressed.run(values.data(), values.size(), tag, all_gather);
            results[rank].back()[tag] = values;
          }
        }
      }));
    }
    for (auto& t : threads) ASSERT_EQ(t.wait_for(kDeadline), std::future_status::ready) << "a rank hung";
    for (auto& t : threads) t.get();
    for (size_t rank = 0; rank < kRanks; ++rank) {
      for (int round = 0; round < kRounds; ++round) {
        for (uint64_t tag : kTags) {
          EXPECT_EQ(results[rank][static_cast<size_t>(round)][tag], expected[static_cast<size_t>(round)].at(tag))
              << "rank " << rank << ", round " << round << ", tag " << tag;
        }
      }
    }
  }
}

TEST(CompressedAllReduce, BytesThatDoNotDecodeAreAProtocolErrorNamingTheRank) {
  const CompressionConfig config = CompressionConfig::parse("2bit:threshold=0.5");
  CompressedAllReduce compressed("test-store", config);
  std::vector<float> values = gradient(0, 7, 0);
  // Ranks 0 and 2 send what this rank sent; rank 1's bytes are one too many.
  const AllGatherBytes all_gather = [](const uint8_t* data, size_t size) {
    std::vector<uint8_t> mine(data, data + size);
    std::vector<uint8_t> longer = mine;
    longer.push_back(0);
    return std::vector<std::vector<uint8_t>>{mine, longer, mine};
  };
  try {
    compressed.run(values.data(), values.size(), 7, all_gather);
    ADD_FAILURE() << "rank 1's bytes decoded";
  } catch (const core::Error& e) {
    EXPECT_EQ(e.code(), core::ErrorCode::kProtocol);
    const std::string what = e.what();
    EXPECT_NE(what.find("test-store: worker 1's"), std::string::npos) << what;
  }
}

TEST(CompressedAllReduce, AnErrorOfTheExchangeReachesTheCaller) {
  CompressedAllReduce compressed("test-store", CompressionConfig::parse("topk:fraction=0.1"));
  std::vector<float> values = gradient(0, 7, 0);
  const AllGatherBytes all_gather = [](const uint8_t*, size_t) -> std::vector<std::vector<uint8_t>> {
    throw core::Error(core::ErrorCode::kTimedOut, "nobody came");
  };
  try {
    compressed.run(values.data(), values.size(), 7, all_gather);
    ADD_FAILURE() << "the exchange's error was lost";
  } catch (const core::Error& e) {
    EXPECT_EQ(e.code(), core::ErrorCode::kTimedOut);
  }
}

}  // namespace
}  // namespace dt::kvstore
