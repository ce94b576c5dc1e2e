// SurvivorGroup (the "allreduce" store's workers after a loss): a real
// scheduler and three worker threads over inproc://, their links ipc://.
// Worker 2 vanishes (its connection closes without a goodbye) and the
// others regroup. The two ways a step the loss interrupted can end, each
// forced: no survivor finished it (it runs again over the survivors, from
// their inputs), or one did (the others take its result).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include "core/error.h"
#include "integration/inproc_job.h"
#include "kvstore/host/survivor_group.h"
#include "ps/roles/cluster_member.h"
#include "ps/scheduler/scheduler.h"

namespace dt::kvstore {
namespace {

using namespace std::chrono_literals;
using collective::host::HostCommunicator;
using core::DType;
using core::Error;
using core::ErrorCode;
using ps::ClusterMember;
using ps::Role;

constexpr int kWorkers = 3;
constexpr size_t kCount = 1000;

ps::PsOptions options(ps::WorkerLossPolicy policy) {
  ps::PsOptions o = test::fast_options();
  o.worker_loss = policy;
  return o;
}

// What a worker thread does with its group; returns false to vanish (the
// group closed, the member gone without a goodbye) instead of leaving.
using Body = std::function<bool(int rank, SurvivorGroup& group)>;

// Runs the job; the scheduler's own end (an error when the job lost a
// worker it could not go on without) is returned, not thrown.
std::string run_job(ps::WorkerLossPolicy policy, const Body& body) {
  static int n = 0;
  const std::string url = "inproc://survivor-group-" + std::to_string(::getpid()) + "-" + std::to_string(n++);
  ps::Scheduler scheduler(test::inproc_job(url, Role::kScheduler, 0, kWorkers), options(policy));
  auto done = std::async(std::launch::async, [&]() -> std::string {
    try {
      scheduler.run();
      return "";
    } catch (const Error& e) {
      return e.what();
    }
  });
  std::vector<std::future<void>> workers;
  for (int w = 0; w < kWorkers; ++w) {
    workers.push_back(std::async(std::launch::async, [&, w] {
      auto member = std::make_unique<ClusterMember>(test::inproc_job(url, Role::kWorker, 0, kWorkers, w),
                                                    options(policy));
      collective::host::HostCommunicatorOptions comm;
      comm.timeout_s = 10;
      auto group = std::make_unique<SurvivorGroup>(*member, options(policy), comm);
      bool leaves = true;
      try {
        leaves = body(w, *group);
      } catch (...) {
        group.reset();
        member->shutdown();
        throw;
      }
      group.reset();
      if (leaves) member->shutdown();
      member.reset();
    }));
  }
  for (auto& f : workers) {
    EXPECT_EQ(f.wait_for(30s), std::future_status::ready);
    f.get();
  }
  EXPECT_EQ(done.wait_for(15s), std::future_status::ready);
  return done.get();
}

std::vector<int32_t> filled(int32_t v) { return std::vector<int32_t>(kCount, v); }

void all_reduce_step(SurvivorGroup& group, std::vector<int32_t>& data) {
  group.run_step([&](HostCommunicator& comm) { comm.all_reduce_sum(data.data(), data.size(), DType::kInt32); },
                 data.data(), data.size() * sizeof(int32_t));
}

// Regroups between steps, as the store's communication thread does when
// it is idle: once the loss is heard of.
void regroup_once_lost(SurvivorGroup& group) {
  const auto end = std::chrono::steady_clock::now() + 10s;
  while (!group.regroup_pending() && std::chrono::steady_clock::now() < end) std::this_thread::sleep_for(5ms);
  ASSERT_TRUE(group.regroup_pending());
  group.regroup();
}

TEST(SurvivorGroup, AStepNoSurvivorFinishedRunsAgainOverTheSurvivorsFromTheirInputs) {
  const std::string end = run_job(ps::WorkerLossPolicy::kContinue, [](int rank, SurvivorGroup& group) {
    std::vector<int32_t> data = filled(rank + 1);
    all_reduce_step(group, data);
    EXPECT_EQ(data, filled(6));
    if (rank == 2) {
      std::this_thread::sleep_for(200ms);  // the others wait in step 2
      return false;
    }
    // Step 2 waits for worker 2, which never comes: it runs again over
    // workers 0 and 1, each from its own input.
    data = filled(10 * (rank + 1));
    all_reduce_step(group, data);
    EXPECT_EQ(data, filled(30)) << "worker " << rank;
    EXPECT_EQ(group.workers(), (std::vector<int>{0, 1}));
    // The group goes on.
    data = filled(rank + 1);
    all_reduce_step(group, data);
    EXPECT_EQ(data, filled(3));
    return true;
  });
  EXPECT_EQ(end, "");
}

TEST(SurvivorGroup, AStepOneSurvivorFinishedGivesItsResultToTheOthers) {
  const std::string end = run_job(ps::WorkerLossPolicy::kContinue, [](int rank, SurvivorGroup& group) {
    std::vector<int32_t> data = filled(rank + 1);
    all_reduce_step(group, data);
    EXPECT_EQ(data, filled(6));
    if (rank == 2) {
      std::this_thread::sleep_for(200ms);
      return false;
    }
    if (rank == 0) {
      // Worker 0 finished step 2 just before the loss, with worker 2's data
      // in its result (42 here); it is idle when the others regroup.
      data = filled(0);
      group.run_step([&](HostCommunicator&) { std::fill(data.begin(), data.end(), 42); }, data.data(), data.size() * sizeof(int32_t));
      regroup_once_lost(group);
    } else {
      // Worker 1 is still in step 2, which the loss breaks: it takes worker
      // 0's result, not a sum without worker 2.
      data = filled(10);
      all_reduce_step(group, data);
    }
    EXPECT_EQ(data, filled(42)) << "worker " << rank;
    data = filled(rank + 1);
    all_reduce_step(group, data);
    EXPECT_EQ(data, filled(3)) << "worker " << rank;
    return true;
  });
  EXPECT_EQ(end, "");
}

// A step whose result every worker holds once it finished (init's
// broadcasts ending with a confirming all-reduce): nothing is sent, the
// step just ends for the survivor that was still in it.
TEST(SurvivorGroup, AStepWithoutBytesOneSurvivorFinishedEndsForTheOthers) {
  const std::string end = run_job(ps::WorkerLossPolicy::kContinue, [](int rank, SurvivorGroup& group) {
    std::vector<int32_t> data = filled(rank + 1);
    all_reduce_step(group, data);
    if (rank == 2) {
      std::this_thread::sleep_for(200ms);
      return false;
    }
    bool ran = false;
    if (rank == 0) {
      group.run_step([&](HostCommunicator&) { ran = true; }, nullptr, 0);
      regroup_once_lost(group);
    } else {
      group.run_step(
          [&](HostCommunicator& comm) {
            int32_t one = 1;
            comm.all_reduce_sum(&one, 1, DType::kInt32);
            ran = true;
          },
          nullptr, 0);
    }
    // Worker 1's step ended by the settlement, not by running again.
    EXPECT_EQ(ran, rank == 0) << "worker " << rank;
    data = filled(rank + 1);
    all_reduce_step(group, data);
    EXPECT_EQ(data, filled(3)) << "worker " << rank;
    return true;
  });
  EXPECT_EQ(end, "");
}

TEST(SurvivorGroup, WithoutContinueALostWorkerFailsTheStep) {
  const std::string end = run_job(ps::WorkerLossPolicy::kFail, [](int rank, SurvivorGroup& group) {
    std::vector<int32_t> data = filled(rank + 1);
    all_reduce_step(group, data);
    if (rank == 2) return false;
    try {
      all_reduce_step(group, data);
      ADD_FAILURE() << "worker " << rank << " finished a step without worker 2";
    } catch (const Error& e) {
      EXPECT_TRUE(e.code() == ErrorCode::kPeerLost || e.code() == ErrorCode::kBadState) << e.what();
    }
    return true;
  });
  EXPECT_NE(end.find("worker 2"), std::string::npos) << end;
}

}  // namespace
}  // namespace dt::kvstore
