// The all-gather barrier through a real scheduler over inproc: how worker 0
// hands an NCCL unique id (an opaque 128-byte blob) to every worker without
// MPI. Needs no GPU.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <string>
#include <vector>

#include <unistd.h>

#include "core/error.h"
#include "integration/inproc_job.h"
#include "ps/roles/cluster_member.h"
#include "ps/scheduler/scheduler.h"

namespace dt::ps {
namespace {

using namespace std::chrono_literals;
using core::Error;
using core::ErrorCode;
using test::fast_options;
using test::inproc_job;

std::string inproc_url() {
  static int n = 0;
  return "inproc://ps-allgather-" + std::to_string(::getpid()) + "-" + std::to_string(n++);
}

// The size of an ncclUniqueId, without needing nccl.h in this build.
constexpr size_t kIdBytes = 128;

std::vector<uint8_t> blob_of(int rank, size_t bytes) {
  std::vector<uint8_t> b(bytes);
  for (size_t i = 0; i < bytes; ++i) b[i] = static_cast<uint8_t>(31 * rank + 7 * i + 1);
  return b;
}

// A job of one server and `workers` threads, each running body(member).
void run_job(int workers, const std::function<void(ClusterMember&)>& body) {
  const std::string url = inproc_url();
  Scheduler scheduler(inproc_job(url, Role::kScheduler, 1, workers), fast_options());
  auto done = std::async(std::launch::async, [&] { scheduler.run(); });
  auto server = std::async(std::launch::async, [&] {
    ClusterMember m(inproc_job(url, Role::kServer, 1, workers), fast_options(), {"inproc://unused"});
    m.wait_for_stop();
  });
  std::vector<std::future<void>> members;
  for (int w = 0; w < workers; ++w) {
    members.push_back(std::async(std::launch::async, [&, w] {
      ClusterMember m(inproc_job(url, Role::kWorker, 1, workers, w), fast_options());
      try {
        body(m);
      } catch (...) {
        m.shutdown();
        throw;
      }
      m.shutdown();
    }));
  }
  for (auto& f : members) {
    ASSERT_EQ(f.wait_for(20s), std::future_status::ready);
    f.get();
  }
  ASSERT_EQ(server.wait_for(10s), std::future_status::ready);
  server.get();
  ASSERT_EQ(done.wait_for(10s), std::future_status::ready);
  done.get();
}

TEST(PsAllGather, Rank0BlobReachesEveryWorkerBetweenBarriers) {
  run_job(3, [](ClusterMember& m) {
    m.barrier();
    // Only worker 0 has something to say, as with an NCCL unique id.
    const std::vector<uint8_t> mine = m.rank() == 0 ? blob_of(0, kIdBytes) : std::vector<uint8_t>{};
    const auto all = m.allgather(mine);
    ASSERT_EQ(all.size(), 3u);
    EXPECT_EQ(all[0], blob_of(0, kIdBytes));
    EXPECT_TRUE(all[1].empty());
    EXPECT_TRUE(all[2].empty());
    m.barrier();
    // Every worker contributes: the answer is indexed by rank.
    const auto each = m.allgather(blob_of(m.rank(), 10 + m.rank()));
    ASSERT_EQ(each.size(), 3u);
    for (int r = 0; r < 3; ++r) EXPECT_EQ(each[r], blob_of(r, 10 + r)) << "rank " << r;
  });
}

TEST(PsAllGather, OversizeDataIsRejectedBeforeItIsSent) {
  run_job(1, [](ClusterMember& m) {
    try {
      m.allgather(std::vector<uint8_t>(ClusterMember::kMaxGatherBytes + 1));
      ADD_FAILURE() << "oversize data accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    }
    // The rejected call took no barrier id: the next exchange still works.
    EXPECT_EQ(m.allgather({1, 2, 3}), (std::vector<std::vector<uint8_t>>{{1, 2, 3}}));
  });
}

TEST(PsAllGather, AllGatherMeetingAPlainBarrierIsABadState) {
  run_job(2, [](ClusterMember& m) {
    try {
      if (m.rank() == 0) {
        m.barrier();
      } else {
        m.allgather({42});
      }
      ADD_FAILURE() << "out-of-step calls succeeded on rank " << m.rank();
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kBadState) << e.what();
      EXPECT_NE(std::string(e.what()).find("out of step"), std::string::npos) << e.what();
    }
  });
}

// The regroup gather (an all-reduce job's survivors): every worker still in
// the job, at the count of workers lost so far, beside the numbered
// barriers; another count is refused with "ask again".
TEST(PsAllGather, RegroupGathersEveryWorkerAtTheJobsLossCountOutsideTheBarriers) {
  run_job(3, [](ClusterMember& m) {
    m.barrier();
    const auto all = m.regroup(0, blob_of(m.rank(), 20));
    ASSERT_EQ(all.size(), 3u);
    for (int r = 0; r < 3; ++r) EXPECT_EQ(all.at(r), blob_of(r, 20)) << "rank " << r;
    try {
      m.regroup(2, {1});
      ADD_FAILURE() << "a regroup at a count the job has not reached was gathered";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kBadState) << e.what();
      EXPECT_NE(std::string(e.what()).find("ask again"), std::string::npos) << e.what();
    }
    // It took no barrier id: the numbered barriers go on in step.
    m.barrier();
    EXPECT_EQ(m.allgather({static_cast<uint8_t>(m.rank())}).size(), 3u);
  });
}

}  // namespace
}  // namespace dt::ps
