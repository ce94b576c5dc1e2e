// New copies of parts (ServerKeyStore, "New copies"): a server taking on a
// part mid-training from the pushes the workers send it and the source's
// state, and computing from then on the very bytes the source computes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "optim/optimizer_config.h"
#include "ps/compression/compression_mode.h"
#include "ps/server/key_store.h"

namespace dt::ps {
namespace {

using core::DType;
using core::Error;
using core::ErrorCode;
using core::Shape;

constexpr int64_t kN = 37;

PartInfo info(uint64_t key) { return PartInfo{PartKey{key, 0, kN}, DType::kFloat32, Shape({kN})}; }

std::vector<float> gradient(int worker, int64_t round) {
  std::vector<float> g(kN);
  for (int64_t i = 0; i < kN; ++i) g[i] = std::sin(0.37f * float(i + 1) * float(round) + float(worker)) * 0.5f;
  return g;
}

// A push's answer: whether it came, and its error.
struct PushResult {
  bool done = false;
  std::string error;
  ServerKeyStore::PushDone callback() {
    return [this](const Error* e) {
      done = true;
      if (e) error = e->what();
    };
  }
};

// The value of a round that is applied (answered at once; the answer is
// kept apart, so a pull answered later, after a failure, writes nowhere
// it should not).
std::vector<float> pull(ServerKeyStore& store, uint64_t key, int64_t round) {
  struct Answer {
    bool done = false;
    std::vector<float> value;
  };
  auto answer = std::make_shared<Answer>();
  store.pull(info(key), round, [answer](const Error* e, const ServerKeyStore::PullAnswer& a) {
    answer->done = true;
    ASSERT_EQ(e, nullptr) << e->what();
    answer->value.resize(a.bytes / sizeof(float));
    std::memcpy(answer->value.data(), a.data, a.bytes);
  });
  EXPECT_TRUE(answer->done) << "round " << round << " is applied";
  return answer->value;
}

// The source and the new copy of one job's part, each with the job's
// optimizer; fill requests are caught, to be answered by the test.
class NewCopy : public ::testing::Test {
 protected:
  void SetUp() override { make(2); }

  void make(int workers) {
    source_ = std::make_unique<ServerKeyStore>(ServerKeyStore::Mode::kSync, workers);
    copy_ = std::make_unique<ServerKeyStore>(ServerKeyStore::Mode::kSync, workers);
    for (auto* store : {source_.get(), copy_.get()}) {
      store->set_optimizer(optim::OptimizerConfig("sgd").set("momentum", 0.9).set("learning_rate", 0.1));
    }
    copy_->on_fill_wanted([this](const ServerKeyStore::FillRequest& r) { requests_.push_back(r); });
    std::vector<float> initial(kN, 0.25f);
    for (int w = workers - 1; w >= 0; --w) {
      source_->init(w, info(7), initial.data(), initial.size() * sizeof(float));
    }
  }

  // Returns what the store said: whether the push was kept at a copy still
  // being filled.
  bool push(ServerKeyStore& store, int worker, int64_t round, PushResult* result = nullptr, int adopt_from = -1,
            const optim::UpdateNumbers& numbers = {}, bool resent = false) {
    const auto g = gradient(worker, round);
    // A push held at the copy is answered after this returns: an unwatched
    // one's answer goes nowhere.
    ServerKeyStore::PushDone done = result ? result->callback() : [](const Error*) {};
    return store.push(worker, info(7), round, g.data(), g.size() * sizeof(float), std::move(done), resent,
                      adopt_from, numbers);
  }

  // A round's push of worker to the source and to the copy.
  void push_both(int worker, int64_t round) {
    push(*source_, worker, round);
    push(*copy_, worker, round, nullptr, 0);
  }

  // Answers the caught request from the source, as PartFiller does.
  void fill() {
    ASSERT_EQ(requests_.size(), 1u);
    const ServerKeyStore::FillRequest request = requests_.front();
    requests_.clear();
    EXPECT_EQ(request.source, 0);
    bool answered = false;
    source_->part_state(request.info, request.min_round,
                        [&](const Error* e, const ServerKeyStore::PartState& state) {
                          answered = true;
                          ASSERT_EQ(e, nullptr) << e->what();
                          EXPECT_GE(state.round, request.min_round);
                          copy_->install(request.info, state);
                        });
    ASSERT_TRUE(answered);
  }

  void expect_same(int64_t round) {
    const auto a = pull(*source_, 7, round);
    const auto b = pull(*copy_, 7, round);
    ASSERT_EQ(a.size(), b.size());
    EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float))) << "round " << round;
  }

  std::unique_ptr<ServerKeyStore> source_;
  std::unique_ptr<ServerKeyStore> copy_;
  std::vector<ServerKeyStore::FillRequest> requests_;
};

TEST_F(NewCopy, FilledMidTrainingItComputesTheSourcesBytes) {
  for (int64_t round = 1; round <= 3; ++round) {
    push(*source_, 1, round);
    push(*source_, 0, round);
  }
  // Round 4: worker 1 has not heard of the new copy yet; worker 0 has.
  PushResult held0;
  push(*source_, 0, 4);
  push(*copy_, 0, 4, &held0, 0);
  push(*source_, 1, 4);
  EXPECT_TRUE(requests_.empty()) << "worker 1 has not pushed to the new copy";
  EXPECT_TRUE(copy_->filling(info(7)));
  // Round 5: both push to both.
  PushResult held1, held0_5;
  push(*source_, 1, 5);
  push(*copy_, 1, 5, &held1, 0);
  ASSERT_EQ(requests_.size(), 1u);
  EXPECT_EQ(requests_.front().min_round, 4) << "the round before worker 1's first push here";
  // Answered at once, their bytes kept: a worker waiting here would hold up
  // its rounds on the source, which the other may need before it comes.
  EXPECT_TRUE(held0.done);
  EXPECT_EQ(held0.error, "");
  EXPECT_TRUE(held1.done);
  EXPECT_TRUE(copy_->filling(info(7)));
  fill();
  EXPECT_FALSE(copy_->filling(info(7)));
  push(*source_, 0, 5);
  push(*copy_, 0, 5, &held0_5, 0);
  EXPECT_TRUE(held0_5.done);
  expect_same(5);
  for (int64_t round = 6; round <= 8; ++round) {
    for (int w : {1, 0}) {
      push_both(w, round);
    }
    expect_same(round);
  }
  // The optimizer's state went along (momentum): the same bytes on both.
  const auto a = source_->optimizer_state();
  const auto b = copy_->optimizer_state();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].first.find('.') == std::string::npos) continue;  // num_update, learning_rate
    EXPECT_EQ(a[i].first, b[i].first);
    EXPECT_EQ(0, std::memcmp(a[i].second.data(), b[i].second.data(), a[i].second.nbytes())) << a[i].first;
  }
}

// Worker 0's pushes carry the numbers of their rounds (the trainer changes
// rescale_grad for an epoch's last batch, and back): a copy replaying kept
// pushes after a later setting reached it applies each round with the
// numbers the source applied it with.
TEST_F(NewCopy, KeptRoundsAreAppliedWithTheNumbersWorker0PushedThemWith) {
  const auto numbers = [](int64_t round) { return optim::UpdateNumbers{0.1, 1.0 / double(60 + round)}; };
  for (int64_t round = 1; round <= 3; ++round) {
    push(*source_, 1, round);
    push(*source_, 0, round, nullptr, -1, numbers(round));
  }
  // Worker 0 knows of the copy from round 4 on; worker 1 from round 5.
  push(*source_, 0, 4, nullptr, -1, numbers(4));
  push(*copy_, 0, 4, nullptr, 0, numbers(4));
  push(*source_, 1, 4);
  push(*source_, 0, 5, nullptr, -1, numbers(5));
  push(*copy_, 0, 5, nullptr, 0, numbers(5));
  push(*copy_, 1, 5, nullptr, 0);
  // The source answers with round 4; its answer travels while worker 1's
  // push completes round 5 there, and worker 0's setting for round 6 reaches
  // both servers.
  ASSERT_EQ(requests_.size(), 1u);
  std::vector<float> value;
  ServerKeyStore::PartState state;
  source_->part_state(requests_.front().info, requests_.front().min_round,
                      [&](const Error* e, const ServerKeyStore::PartState& s) {
                        ASSERT_EQ(e, nullptr) << e->what();
                        state = s;
                        value.assign(static_cast<const float*>(s.value),
                                     static_cast<const float*>(s.value) + s.bytes / sizeof(float));
                      });
  ASSERT_EQ(state.round, 4);
  state.value = value.data();
  push(*source_, 1, 5);
  for (auto* store : {source_.get(), copy_.get()}) {
    store->set_rescale_grad(1.0 / 7);
    store->set_learning_rate(0.02);
  }
  copy_->install(requests_.front().info, state);
  requests_.clear();
  ASSERT_FALSE(copy_->filling(info(7)));
  expect_same(5);
  for (int64_t round = 6; round <= 7; ++round) {
    for (int w : {1, 0}) {
      push(*source_, w, round, nullptr, -1, w == 0 ? numbers(round) : optim::UpdateNumbers{});
      push(*copy_, w, round, nullptr, 0, w == 0 ? numbers(round) : optim::UpdateNumbers{});
    }
    expect_same(round);
  }
}

// A worker that heard of the copy long before the other (a heartbeat
// interval is many rounds) is not held up, and its copy keeps only the
// pushes a fill may need: the copy still computes the source's bytes.
TEST_F(NewCopy, AWorkerManyRoundsAheadOfTheOthersFirstPushHereKeepsOnlyWhatTheFillNeeds) {
  push(*source_, 0, 1);
  push(*source_, 1, 1);
  // Rounds 2-30: worker 0 pushes to both, worker 1 to the source only.
  for (int64_t round = 2; round <= 30; ++round) {
    PushResult answered;
    push(*source_, 0, round);
    push(*copy_, 0, round, &answered, 0);
    EXPECT_TRUE(answered.done) << "round " << round;
    push(*source_, 1, round);
  }
  EXPECT_TRUE(requests_.empty());
  // Worker 1 hears of it: from round 31 on it pushes here too.
  push_both(0, 31);
  push_both(1, 31);
  ASSERT_EQ(requests_.size(), 1u);
  EXPECT_EQ(requests_.front().min_round, 30);
  fill();
  for (int64_t round = 32; round <= 34; ++round) {
    for (int w : {1, 0}) push_both(w, round);
    expect_same(round);
  }
}

// Workers do not wait at a copy, so the source may be rounds past the one
// asked for when it answers, and a worker's push of such a round to the
// copy may come after the fill: it is in the state already, answered and
// not counted (it was refused as a second push of the round).
TEST_F(NewCopy, APushOfARoundTheStateHoldsThatComesAfterTheFillIsNotCountedAgain) {
  push(*source_, 0, 1);
  push(*source_, 1, 1);
  push_both(0, 2);
  push_both(1, 2);
  ASSERT_EQ(requests_.size(), 1u);
  EXPECT_EQ(requests_.front().min_round, 1);
  // Round 3 is applied on the source; worker 1's push of it to the copy is
  // still on its way when the source answers.
  push_both(0, 3);
  push(*source_, 1, 3);
  fill();
  EXPECT_FALSE(copy_->filling(info(7)));
  PushResult late;
  push(*copy_, 1, 3, &late, 0);
  EXPECT_TRUE(late.done);
  EXPECT_EQ(late.error, "");
  for (int w : {1, 0}) push_both(w, 4);
  expect_same(4);
}

TEST_F(NewCopy, TheSourceAnswersOnceTheRoundAskedForIsApplied) {
  push(*source_, 0, 1);
  push(*source_, 1, 1);
  push_both(0, 2);
  push(*copy_, 1, 2, nullptr, 0);  // not pushed to the source yet: round 2 is open there
  ASSERT_EQ(requests_.size(), 1u);
  EXPECT_EQ(requests_.front().min_round, 1);
  // Asked for round 2, the source waits for it.
  std::optional<int64_t> answered_round;
  source_->part_state(info(7), 2, [&](const Error* e, const ServerKeyStore::PartState& state) {
    ASSERT_EQ(e, nullptr);
    answered_round = state.round;
  });
  EXPECT_FALSE(answered_round.has_value());
  push(*source_, 1, 2);
  ASSERT_TRUE(answered_round.has_value());
  EXPECT_EQ(*answered_round, 2);
  fill();
  expect_same(2);
}

TEST_F(NewCopy, AWorkerTheJobWentOnWithoutIsNotWaitedFor) {
  make(3);
  for (int w = 0; w < 3; ++w) push(*source_, w, 1);
  source_->worker_departed(2);
  copy_->worker_departed(2);
  push_both(0, 2);
  EXPECT_TRUE(requests_.empty());
  push_both(1, 2);
  ASSERT_EQ(requests_.size(), 1u);
  fill();
  push_both(0, 3);
  push_both(1, 3);
  expect_same(3);
}

TEST_F(NewCopy, AWorkerLeavingWhileItFillsLetsTheFillGoOn) {
  make(3);
  for (int w = 0; w < 3; ++w) push(*source_, w, 1);
  push_both(0, 2);
  push_both(1, 2);
  EXPECT_TRUE(requests_.empty()) << "worker 2 has not pushed here";
  source_->worker_departed(2);
  copy_->worker_departed(2);
  ASSERT_EQ(requests_.size(), 1u);
  fill();
  push_both(0, 3);
  push_both(1, 3);
  expect_same(3);
}

TEST_F(NewCopy, AFailedFillDropsTheHeldPushesAndStartsAfresh) {
  EXPECT_FALSE(push(*source_, 0, 1));
  EXPECT_FALSE(push(*source_, 1, 1));
  EXPECT_TRUE(push(*copy_, 0, 2, nullptr, 0));
  // The push that asks for the fill says it was kept, whatever becomes of
  // the fill (here it fails at once, as from a lost source, before anyone
  // could ask filling()): the worker must not count this copy as filled.
  EXPECT_TRUE(push(*copy_, 1, 2, nullptr, 0));
  ASSERT_EQ(requests_.size(), 1u);
  requests_.clear();
  copy_->fail_fill(info(7), Error(ErrorCode::kPeerLost, "server 0 lost"));
  EXPECT_FALSE(copy_->filling(info(7)));
  // The workers' next pushes start it again.
  push(*source_, 0, 2);
  push(*source_, 1, 2);
  push_both(0, 3);
  push_both(1, 3);
  ASSERT_EQ(requests_.size(), 1u);
  EXPECT_EQ(requests_.front().min_round, 2);
  fill();
  expect_same(3);
}

TEST_F(NewCopy, AnInstallThatDoesNotFitIsRefusedAndTheCopyKeepsWaiting) {
  push(*source_, 0, 1);
  push(*source_, 1, 1);
  push(*copy_, 0, 2, nullptr, 0);
  push(*copy_, 1, 2, nullptr, 0);
  const std::vector<float> short_value(kN - 1, 1.0f);
  ServerKeyStore::PartState wrong;
  wrong.round = 1;
  wrong.value = short_value.data();
  wrong.bytes = short_value.size() * sizeof(float);
  try {
    copy_->install(info(7), wrong);
    ADD_FAILURE() << "a value of the wrong size was installed";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kShapeMismatch);
  }
  const std::vector<float> value(kN, 1.0f);
  ServerKeyStore::PartState early{0, value.data(), value.size() * sizeof(float), {}};
  try {
    copy_->install(info(7), early);
    ADD_FAILURE() << "a state before the round asked for was installed";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kBadState);
  }
  EXPECT_TRUE(copy_->filling(info(7)));
  fill();
  push(*source_, 0, 2);
  push(*source_, 1, 2);
  expect_same(2);
}

TEST_F(NewCopy, AJoinedWorkersInitKeepsTheCopysValue) {
  push(*source_, 0, 1);
  push(*source_, 1, 1);
  push(*copy_, 0, 2, nullptr, 0);
  push(*copy_, 1, 2, nullptr, 0);
  fill();
  push(*source_, 0, 2);
  push(*source_, 1, 2);
  const auto before = pull(*copy_, 7, 2);
  std::vector<float> fresh(kN, 9.0f);
  copy_->init(0, info(7), fresh.data(), fresh.size() * sizeof(float));
  EXPECT_EQ(pull(*copy_, 7, 2), before);
}

TEST(NewCopyRefusals, AsyncTakesNoNewCopiesAndAnOrdinaryPushNeedsAnInit) {
  ServerKeyStore async(ServerKeyStore::Mode::kAsync, 2);
  const auto g = gradient(0, 1);
  try {
    async.push(0, info(3), 1, g.data(), g.size() * sizeof(float), [](const Error*) {}, false, 1);
    ADD_FAILURE() << "a new copy was taken on in dist_async";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotSupported) << e.what();
  }
  ServerKeyStore plain(ServerKeyStore::Mode::kSync, 2);
  try {
    plain.push(0, info(3), 1, g.data(), g.size() * sizeof(float), [](const Error*) {});
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
  }
}

// Compressed pulls (no optimizer on the servers): the copy takes over the
// source's residual and its round's encoding, so that both answer every
// later pull with the same bytes.
TEST(NewCopyCompressed, TheCopysPullsAreTheSourcesBytes) {
  const auto config = compression::CompressionConfig::parse("2bit:threshold=0.5");
  ServerKeyStore source(ServerKeyStore::Mode::kSync, 2);
  ServerKeyStore copy(ServerKeyStore::Mode::kSync, 2);
  for (auto* store : {&source, &copy}) store->set_compression(config);
  std::vector<ServerKeyStore::FillRequest> requests;
  copy.on_fill_wanted([&](const ServerKeyStore::FillRequest& r) { requests.push_back(r); });
  std::vector<float> initial(kN, 0.0f);
  for (int w : {1, 0}) source.init(w, info(7), initial.data(), initial.size() * sizeof(float));
  const auto push = [&](ServerKeyStore& store, int worker, int64_t round, int adopt_from) {
    const auto g = gradient(worker, round);
    store.push(worker, info(7), round, g.data(), g.size() * sizeof(float), [](const Error* e) {
      ASSERT_EQ(e, nullptr) << e->what();
    }, false, adopt_from);
  };
  const auto encoded = [&](ServerKeyStore& store, int64_t round) {
    std::vector<uint8_t> bytes;
    store.pull(info(7), round, [&](const Error* e, const ServerKeyStore::PullAnswer& a) {
      ASSERT_EQ(e, nullptr) << e->what();
      EXPECT_NE(a.encoding, 0);
      const auto* begin = static_cast<const uint8_t*>(a.data);
      bytes.assign(begin, begin + a.bytes);
    });
    return bytes;
  };
  for (int64_t round = 1; round <= 3; ++round) {
    push(source, 0, round, -1);
    push(source, 1, round, -1);
  }
  push(source, 0, 4, -1);
  push(copy, 0, 4, 0);
  push(source, 1, 4, -1);
  push(copy, 1, 4, 0);
  ASSERT_EQ(requests.size(), 1u);
  source.part_state(requests[0].info, requests[0].min_round, [&](const Error* e, const ServerKeyStore::PartState& s) {
    ASSERT_EQ(e, nullptr) << e->what();
    EXPECT_FALSE(s.pull_residual.empty());
    EXPECT_TRUE(s.encoded);
    copy.install(requests[0].info, s);
  });
  EXPECT_EQ(encoded(copy, 4), encoded(source, 4)) << "the round the copy was filled at";
  for (int64_t round = 5; round <= 7; ++round) {
    for (int w : {0, 1}) {
      push(source, w, round, -1);
      push(copy, w, round, 0);
    }
    EXPECT_EQ(encoded(copy, round), encoded(source, round)) << "round " << round;
  }
  ASSERT_NE(copy.pull_residual(7, 0), nullptr);
  EXPECT_EQ(*copy.pull_residual(7, 0), *source.pull_residual(7, 0));
}

}  // namespace
}  // namespace dt::ps
