// dtrun --launcher mpi for real: the scheduler under dtrun, servers and
// workers as the ranks of one Open MPI mpirun on loopback, each rank taking
// its role from OMPI_COMM_WORLD_RANK (ranks 0..S-1 servers, the rest
// workers). Workers are this program re-executed with --pushpull-worker (a
// dist_sync kvstore: rank r pushes r+1 and pulls the sum; with
// DTRUN_TEST_HOLD=1 it keeps pushing until the job fails). After every job
// the test checks that no process the job started is left: dtrun's process
// group, and every descendant of dtrun seen while the job ran (mpirun gives
// its ranks process groups of their own). Every wait has a deadline.
#include <gtest/gtest.h>

#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "dtrun_harness.h"
#include "dtrun_pushpull_worker.h"

namespace {

using namespace dt::test;

void require_mpirun() {
  ASSERT_EQ(std::system("command -v mpirun >/dev/null 2>&1"), 0)
      << "mpirun is not installed: these tests need Open MPI (Debian: apt-get install openmpi-bin)";
}

std::vector<std::string> mpi_job(const std::vector<std::string>& extra = {}) {
  return pushpull_job({"--launcher", "mpi", "-n", "2", "-s", "1"}, extra);
}

TEST(DtrunMpi, DistSyncJobRunsUnderMpirun) {
  require_mpirun();
  DtrunProcess job(mpi_job(), "sync");
  const std::optional<int> status = job.wait(120s);
  ASSERT_TRUE(status) << "dtrun did not finish\n" << job.output();
  const std::string out = job.output();
  EXPECT_EQ(exit_code(*status), 0) << out;
  // Rank r > 0 is worker r - 1; 1 + 2 summed by the one server (rank 0).
  EXPECT_NE(out.find("[1,1]<stdout>:pushpull_sum=3 rank=0"), std::string::npos) << out;
  EXPECT_NE(out.find("[1,2]<stdout>:pushpull_sum=3 rank=1"), std::string::npos) << out;
  EXPECT_NE(out.find("job layout from OMPI_COMM_WORLD_* (rank 0 of 3, 1 server + 2 workers): server 0"),
            std::string::npos) << out;
  EXPECT_NE(out.find("job layout from OMPI_COMM_WORLD_* (rank 2 of 3, 1 server + 2 workers): worker 1"),
            std::string::npos) << out;
  EXPECT_NE(out.find("dtrun: job finished: every process exited cleanly"), std::string::npos) << out;
  job.expect_nothing_left();
}

// Starts a holding job and returns once both workers push; fills pids.
void start_holding(DtrunProcess& job, std::map<int, pid_t>& worker_pids) {
  ASSERT_TRUE(wait_until([&] { return job.count("holding rank=") == 2; }, 90s)) << job.output();
  const std::string out = job.output();
  std::regex line("holding rank=([0-9]+) pid=([0-9]+)");
  for (auto it = std::sregex_iterator(out.begin(), out.end(), line); it != std::sregex_iterator(); ++it) {
    worker_pids[std::stoi((*it)[1])] = std::stoi((*it)[2]);
  }
  ASSERT_EQ(worker_pids.size(), 2u) << out;
  // mpirun, dt-node (server), both workers and the scheduler at least.
  EXPECT_GE(job.snapshot_descendants().size(), 5u) << job.output();
}

TEST(DtrunMpi, KilledRankStopsTheWholeJob) {
  require_mpirun();
  DtrunProcess job(mpi_job({"--env-worker", "DTRUN_TEST_HOLD=1"}), "kill_rank");
  std::map<int, pid_t> workers;
  start_holding(job, workers);
  if (HasFatalFailure()) return;
  const auto killed_at = Clock::now();
  ASSERT_EQ(kill(workers[1], SIGKILL), 0);
  expect_job_failed(job, 60s, 128 + SIGKILL, "dtrun: job failed: mpirun exited with status 137 (a rank failed",
                    killed_at, 20.0);
}

TEST(DtrunMpi, KilledMpirunLeavesNoRankBehind) {
  require_mpirun();
  DtrunProcess job(mpi_job({"--env-worker", "DTRUN_TEST_HOLD=1"}), "kill_mpirun");
  std::map<int, pid_t> workers;
  start_holding(job, workers);
  if (HasFatalFailure()) return;
  const std::optional<pid_t> mpirun = job.pid_of("mpirun");
  ASSERT_TRUE(mpirun) << job.output();
  ASSERT_EQ(kill(*mpirun, SIGKILL), 0);
  expect_job_failed(job, 60s, 128 + SIGKILL, "dtrun: job failed: mpirun killed by signal 9");
}

TEST(DtrunMpi, SigintStopsEverythingWithExitCode130) {
  require_mpirun();
  DtrunProcess job(mpi_job({"--env-worker", "DTRUN_TEST_HOLD=1"}), "sigint");
  std::map<int, pid_t> workers;
  start_holding(job, workers);
  if (HasFatalFailure()) return;
  const auto sent_at = Clock::now();
  ASSERT_EQ(kill(job.pid(), SIGINT), 0);
  expect_job_failed(job, 30s, 130, "job failed: interrupted by SIGINT", sent_at, 10.0);
}

TEST(DtrunMpi, FailingWorkerRankFailsTheJob) {
  require_mpirun();
  DtrunProcess job({"--launcher", "mpi", "-n", "2", "-s", "1", "--", "sh", "-c", "exit 3"}, "exit3");
  // mpirun passes on the failed rank's status, and the job's is that.
  expect_job_failed(job, 60s, 3, "job failed: mpirun exited with status 3 (a rank failed");
}

}  // namespace

int main(int argc, char** argv) { return dt::test::pushpull_worker_or_tests(argc, argv); }
