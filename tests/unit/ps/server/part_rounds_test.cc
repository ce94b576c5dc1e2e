// PartRounds alone: the plain round machine, with a scripted answer in place of the
// worker roster, shows that a round needs nothing but the hook's answers.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "core/context.h"
#include "core/error.h"
#include "ps/server/part_rounds.h"

namespace dt::ps {
namespace {

using core::DType;
using core::Error;
using core::Shape;

// Worker `absent_worker` takes no part from round `from` on; nobody returns.
struct ScriptedAttendance : RoundAttendance {
  int absent_worker = -1;
  int64_t from = 0;
  bool absent(int worker, int64_t round) const override { return worker == absent_worker && round >= from; }
  bool someone_returns_after(int64_t) const override { return false; }
};

struct Part {
  explicit Part(int workers) : rounds(PartInfo{PartKey{5, 0, 3}, DType::kFloat32, Shape({3})}, 0, workers, rules,
                                      attendance, core::make_cpu_context(), reduction) {
    rules.set_mode(StoreMode::kSync);
  }
  RoundRules rules;
  ScriptedAttendance attendance;
  ops::cpu::ReductionPool reduction{ops::cpu::ReductionSettings{1, 4000000}};
  PartRounds rounds;
};

void pull(PartRounds& rounds, int64_t round, bool* answered) {
  rounds.pull(round, [answered](const Error* e, const PartRounds::PullAnswer&) {
    EXPECT_EQ(e, nullptr);
    *answered = true;
  });
}

PartRounds::PushDone counted(int* calls) {
  return [calls](const Error* e) {
    EXPECT_EQ(e, nullptr);
    ++*calls;
  };
}

TEST(PartRounds, SumsEachRoundInRankOrderWhateverTheArrivalOrder) {
  Part part(3);
  const std::vector<float> zero{0, 0, 0}, g0{0.1f, 1e8f, -1}, g1{0.2f, 1, 2}, g2{0.3f, -1e8f, 3};
  for (int w = 2; w >= 0; --w) part.rounds.init(w, zero.data());
  ASSERT_TRUE(part.rounds.ready());
  int done = 0;
  for (int w : {2, 0, 1}) {
    PartRounds::PushDone d = counted(&done);
    const auto& g = w == 0 ? g0 : w == 1 ? g1 : g2;
    part.rounds.push(w, 1, g.data(), d, {});
  }
  EXPECT_EQ(done, 3);
  EXPECT_EQ(part.rounds.applied_round(), 1);
  std::vector<float> expected(3);
  for (size_t i = 0; i < 3; ++i) expected[i] = (g0[i] + g1[i]) + g2[i];
  std::vector<float> value(3);
  std::memcpy(value.data(), part.rounds.value().data(), sizeof(float) * 3);
  EXPECT_EQ(value, expected);
}

TEST(PartRounds, AWorkerTheHookCallsAbsentIsPassedOver) {
  Part part(2);
  const std::vector<float> zero{0, 0, 0}, g{1, 2, 3};
  part.rounds.init(1, zero.data());
  part.rounds.init(0, zero.data());
  part.attendance.absent_worker = 1;
  part.attendance.from = 1;
  bool answered = false;
  pull(part.rounds, 1, &answered);
  EXPECT_FALSE(answered) << "round 1 is not applied yet";
  int done = 0;
  PartRounds::PushDone d = counted(&done);
  part.rounds.push(0, 1, g.data(), d, {});
  EXPECT_TRUE(answered) << "worker 1 is absent: worker 0's push completes the round";
  EXPECT_EQ(part.rounds.applied_round(), 1);
}

TEST(PartRounds, APushForALaterRoundIsHeldUntilItsRoundComes) {
  Part part(2);
  const std::vector<float> zero{0, 0, 0}, g{1, 1, 1};
  part.rounds.init(0, zero.data());
  part.rounds.init(1, zero.data());
  int done = 0;
  PartRounds::PushDone d = counted(&done);
  part.rounds.push(0, 1, g.data(), d, {});
  ASSERT_TRUE(part.rounds.must_hold(2));
  part.rounds.hold(0, 2, g.data(), counted(&done), {});
  EXPECT_EQ(done, 1) << "the held push is answered when its round comes";
  PartRounds::PushDone d1 = counted(&done);
  part.rounds.push(1, 1, g.data(), d1, {});
  EXPECT_EQ(done, 3);
  EXPECT_EQ(part.rounds.applied_round(), 1);
  EXPECT_THROW(part.rounds.check_round(0, 2, part.rounds.held_push(0, 2) != nullptr, true), Error);
}

}  // namespace
}  // namespace dt::ps
