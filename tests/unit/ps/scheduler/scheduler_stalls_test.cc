// The scheduler's part of the stall inspector (ps/scheduler/scheduler_stalls.h):
// servers' and all-reduce workers' reports, the workers passed on (the
// stalled ones, not those that only wait on them), and a report that goes
// with its node.
#include "ps/scheduler/scheduler_stalls.h"

#include <gtest/gtest.h>

#include <vector>

namespace dt::ps {
namespace {

class SchedulerStallsTest : public testing::Test {
 protected:
  SchedulerStallsTest() : members(JobConfig{}), barriers([](uint64_t, const auto&) { return false; }, [](uint64_t, auto&) {}) {
    for (int rank = 0; rank < 3; ++rank) add(Role::kWorker, rank);
    add(Role::kServer, 0);
  }
  void add(Role role, int rank) {
    NodeInfo info;
    info.role = role;
    info.rank = rank;
    members.all().emplace(std::make_pair(static_cast<int>(role), rank),
                          Member(info, static_cast<uint32_t>(10 + rank), MemberState::kActive, SchedulerClock::now()));
  }
  Member& member(Role role, int rank) { return members.all().at({static_cast<int>(role), rank}); }
  // A heartbeat from (role, rank) that names workers.
  void report(Role role, int rank, const std::vector<int>& workers) {
    flatbuffers::FlatBufferBuilder fbb;
    fbb.Finish(wire::CreateHeartbeat(fbb, to_wire(role), rank, 0, fbb.CreateVector(workers)));
    stalls.heard(member(role, rank), *flatbuffers::GetRoot<wire::Heartbeat>(fbb.GetBufferPointer()));
  }
  std::vector<std::vector<int>> named() const {
    std::vector<std::vector<int>> out;
    for (const core::OpenWait& w : stalls.open_waits()) out.push_back(w.waits_for);
    return out;
  }

  MemberTable members;
  BarrierBook barriers;
  SchedulerStalls stalls{members, barriers, 2.0};
};

TEST_F(SchedulerStallsTest, AServersReportIsPassedOnAsItWas) {
  report(Role::kServer, 0, {1, 7, 1});  // 7 is no worker of the job
  EXPECT_EQ(stalls.stalled_on(), std::vector<int>{1});
  const std::vector<core::OpenWait> waits = stalls.open_waits();
  ASSERT_EQ(waits.size(), 1u);
  EXPECT_EQ(waits[0].what, "server 0's dist_sync rounds wait for workers {1}");
  EXPECT_EQ(waits[0].waits_for, std::vector<int>{1});
  EXPECT_EQ(waits[0].waited_s, 2.0);
  report(Role::kServer, 0, {});
  EXPECT_TRUE(stalls.stalled_on().empty());
  EXPECT_TRUE(stalls.open_waits().empty());
}

TEST_F(SchedulerStallsTest, InARingOfWaitsTheWorkerThatDoesNotWaitIsTheStalledOne) {
  // Worker 1 stopped: 2 receives from it, 0 from 2.
  report(Role::kWorker, 2, {1});
  report(Role::kWorker, 0, {2});
  EXPECT_EQ(stalls.stalled_on(), std::vector<int>{1});
  const std::vector<core::OpenWait> waits = stalls.open_waits();
  ASSERT_EQ(waits.size(), 2u);
  EXPECT_EQ(waits[0].what, "worker 0's all-reduce waits for workers {2}");
  EXPECT_TRUE(waits[0].waits_for.empty());
  EXPECT_EQ(waits[1].what, "worker 2's all-reduce waits for workers {1}");
  EXPECT_EQ(waits[1].waits_for, std::vector<int>{1});
  // A cycle names every worker in it.
  report(Role::kWorker, 1, {0});
  EXPECT_EQ(stalls.stalled_on(), (std::vector<int>{0, 1, 2}));
  // A lost worker's last report no longer counts: 2 and 0 wait, 2 on the lost 1.
  member(Role::kWorker, 1).lose();
  EXPECT_EQ(stalls.stalled_on(), std::vector<int>{1});
  EXPECT_EQ(named(), (std::vector<std::vector<int>>{{}, {1}}));
}

}  // namespace
}  // namespace dt::ps
