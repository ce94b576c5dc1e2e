// The scheduler's member states: each transition lands where the old flags
// did, and the predicates the plain path and the companions read agree.
#include <gtest/gtest.h>

#include "ps/scheduler/member_table.h"

namespace dt::ps {
namespace {

Member member(MemberState start) {
  NodeInfo info;
  info.role = Role::kWorker;
  info.rank = 1;
  return Member(info, 7, start, SchedulerClock::now());
}

TEST(SchedulerMemberState, LeavingKeepsWhatTheMemberWas) {
  Member active = member(MemberState::kActive);
  active.leave();
  EXPECT_EQ(active.state(), MemberState::kLeft);
  EXPECT_TRUE(active.left());
  EXPECT_TRUE(active.counted());

  // A worker the job went on without may still say goodbye: it stays lost,
  // and its place stays taken.
  Member departed = member(MemberState::kActive);
  departed.lose();
  departed.leave();
  EXPECT_EQ(departed.state(), MemberState::kLostThenLeft);
  EXPECT_TRUE(departed.lost());
  EXPECT_TRUE(departed.left());
  EXPECT_FALSE(departed.counted());

  // One waiting to be let in when the job finished never counted.
  Member waiting = member(MemberState::kAwaitingAdmission);
  waiting.leave();
  EXPECT_EQ(waiting.state(), MemberState::kLeftUnadmitted);
  EXPECT_TRUE(waiting.left());
  EXPECT_TRUE(waiting.awaiting_admission());
  EXPECT_FALSE(waiting.counted());
  waiting.leave();
  EXPECT_EQ(waiting.state(), MemberState::kLeftUnadmitted);
}

TEST(SchedulerMemberState, AJoinedWorkerCountsOnceLetIn) {
  Member joined = member(MemberState::kAwaitingAdmission);
  EXPECT_TRUE(joined.awaiting_admission());
  EXPECT_FALSE(joined.counted());
  EXPECT_FALSE(joined.lost());
  joined.admit();
  EXPECT_EQ(joined.state(), MemberState::kActive);
  EXPECT_FALSE(joined.awaiting_admission());
  EXPECT_TRUE(joined.counted());
}

TEST(SchedulerMemberState, ARejoiningServerIsAnnouncedOrDropped) {
  Member rejoining = member(MemberState::kRejoining);
  EXPECT_FALSE(rejoining.announced());
  EXPECT_FALSE(rejoining.counted());
  rejoining.announce();
  EXPECT_TRUE(rejoining.announced());
  EXPECT_TRUE(rejoining.counted());

  Member dropped = member(MemberState::kRejoining);
  dropped.drop();
  EXPECT_EQ(dropped.state(), MemberState::kDropped);
  EXPECT_TRUE(dropped.lost());
  EXPECT_TRUE(dropped.announced());
  dropped.leave();
  EXPECT_EQ(dropped.state(), MemberState::kDropped);
}

TEST(SchedulerMemberState, TakingAPlaceStartsAfreshOnTheNewConnection) {
  Member place = member(MemberState::kActive);
  place.told = place.disconnected = true;
  place.lose();
  NodeInfo node = place.info;
  node.pid = 4242;
  place.take_place(node, 9, MemberState::kRejoining, SchedulerClock::now());
  EXPECT_EQ(place.state(), MemberState::kRejoining);
  EXPECT_EQ(place.pipe, 9u);
  EXPECT_EQ(place.info.pid, 4242);
  EXPECT_FALSE(place.told);
  EXPECT_FALSE(place.disconnected);
  EXPECT_FALSE(place.lost());
}

}  // namespace
}  // namespace dt::ps
