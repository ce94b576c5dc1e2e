// dtrun for real: whole jobs (scheduler, servers, workers as processes on
// loopback) started, watched and stopped by the dtrun binary. Workers are the
// Fashion-MNIST example or this program re-executed with --pushpull-worker
// (a dist_sync kvstore through the C API: one pushpull, or pushpulls until
// the job fails when DTRUN_TEST_HOLD=1). After every job the test checks
// that nothing of its process group is left. Every wait has a deadline; the
// fixture SIGKILLs whatever still runs.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "dtrun_harness.h"
#include "dtrun_pushpull_worker.h"

namespace {

using namespace dt::test;

// The example sits in the build tree's examples/ beside dtrun (CTest can hand
// a discovered test only one environment variable reliably).
std::string example_binary() {
  const std::string dtrun = env_or_fail("DTRUN_BINARY");
  return dtrun.substr(0, dtrun.rfind('/') + 1) + "examples/train_fashion_mnist";
}

// Two workers of the Fashion-MNIST example: with two servers and dist_sync,
// or with none and the all-reduce store.
std::vector<std::string> training_job(int epochs, const std::string& kvstore = "dist_sync") {
  std::vector<std::string> args = {"-n", "2", "-s", kvstore == "allreduce" ? "0" : "2"};
  args.insert(args.end(), kFastHeartbeats.begin(), kFastHeartbeats.end());
  for (const char* a : {"--", ""}) args.push_back(a);
  args.back() = example_binary();
  for (const std::string& a : {std::string("--kvstore"), kvstore, std::string("--epochs"),
                               std::to_string(epochs), std::string("--batch-size"), std::string("32"),
                               std::string("--threads"), std::string("1")}) {
    args.push_back(a);
  }
  return args;
}

std::vector<std::string> pushpull_job(int workers, const std::vector<std::string>& extra = {}) {
  return dt::test::pushpull_job({"-n", std::to_string(workers), "-s", "1"}, extra);
}

TEST(DtrunJob, DistSyncTrainingEndsCleanlyWithAccurateModel) {
  const auto start = Clock::now();
  const std::string logs = temp_path("train-logs");
  std::vector<std::string> args = training_job(1);
  args.insert(args.begin(), {"--log-dir", logs});
  DtrunProcess job(args, "train");
  const std::optional<int> status = job.wait(400s);
  ASSERT_TRUE(status) << "dtrun did not finish\n" << job.output();
  const std::string out = job.output();
  EXPECT_EQ(exit_code(*status), 0) << out;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(out, m, std::regex(R"(\[worker 0\] test_accuracy=([0-9.]+))"))) << out;
  EXPECT_GE(std::stod(m[1]), 0.80) << out;
  // The epoch line counts what the worker's store moved.
  EXPECT_TRUE(std::regex_search(out, std::regex(R"(\[worker 0\] epoch 1/1: .* sent [1-9][0-9.]* MB received [1-9][0-9.]* MB)")))
      << out;
  // The log file holds the raw lines, without prefixes.
  std::ifstream log(logs + "/worker-0.log");
  std::stringstream log_text;
  log_text << log.rdbuf();
  EXPECT_NE(log_text.str().find("\ntest_accuracy=" + m[1].str()), std::string::npos) << log_text.str();
  for (const char* name : {"scheduler", "server-0", "server-1", "worker-0", "worker-1"}) {
    std::remove((logs + "/" + name + ".log").c_str());
  }
  rmdir(logs.c_str());
  job.expect_nothing_left();
  std::printf("training job took %.1f s\n", std::chrono::duration<double>(Clock::now() - start).count());
}

TEST(DtrunJob, AllreduceTrainingWithoutServersEndsCleanlyWithAccurateModel) {
  const auto start = Clock::now();
  DtrunProcess job(training_job(1, "allreduce"), "train-allreduce");
  const std::optional<int> status = job.wait(400s);
  ASSERT_TRUE(status) << "dtrun did not finish\n" << job.output();
  const std::string out = job.output();
  EXPECT_EQ(exit_code(*status), 0) << out;
  EXPECT_EQ(out.find("[server"), std::string::npos) << "a job without servers started one\n" << out;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(out, m, std::regex(R"(\[worker 0\] test_accuracy=([0-9.]+))"))) << out;
  EXPECT_GE(std::stod(m[1]), 0.80) << out;
  job.expect_nothing_left();
  std::printf("allreduce training job took %.1f s\n", std::chrono::duration<double>(Clock::now() - start).count());
}

// Kills `name` with SIGKILL mid-epoch; dtrun must name it and stop the job
// within twice the heartbeat timeout.
void kill_mid_epoch_stops_job(const std::string& name, const std::string& output,
                              const std::string& kvstore = "dist_sync") {
  DtrunProcess job(training_job(5, kvstore), output);
  ASSERT_TRUE(job.wait_for_output("[worker 0] training lenet", 120s)) << job.output();
  std::this_thread::sleep_for(1s);  // into the epoch
  const std::optional<pid_t> victim = job.pid_of(name);
  ASSERT_TRUE(victim) << job.output();
  const auto killed_at = Clock::now();
  ASSERT_EQ(kill(*victim, SIGKILL), 0);
  expect_job_failed(job, 60s, 128 + SIGKILL, "dtrun: job failed: " + name + " killed by signal 9", killed_at,
                    2 * kHeartbeatTimeoutS);
}

TEST(DtrunJob, KilledWorkerStopsTheJobNamingIt) { kill_mid_epoch_stops_job("worker 1", "kill_worker"); }

TEST(DtrunJob, KilledServerStopsTheJobNamingIt) { kill_mid_epoch_stops_job("server 0", "kill_server"); }

TEST(DtrunJob, KilledWorkerOfAnAllreduceJobStopsItNamingIt) {
  kill_mid_epoch_stops_job("worker 1", "kill_allreduce_worker", "allreduce");
}

// Issue 19: with --worker-loss continue, a worker that dies is reported and
// the job finishes with the others, whose later rounds sum without it.
TEST(DtrunJob, WorkerLossContinueFinishesWithoutTheKilledWorker) {
  DtrunProcess job(dt::test::pushpull_job({"-n", "3", "-s", "1"},
                                          {"--worker-loss", "continue", "--env-worker", "DTRUN_TEST_ROUNDS=6",
                                           "--env-worker", "DTRUN_TEST_LEAVE_RANK=2", "--env-worker",
                                           "DTRUN_TEST_LEAVE_AFTER=2"}),
                   "worker_loss_continue");
  const std::optional<int> status = job.wait(60s);
  ASSERT_TRUE(status) << "dtrun did not stop\n" << job.output();
  EXPECT_EQ(exit_code(*status), 0) << job.output();
  const std::string out = job.output();
  EXPECT_NE(out.find("[worker 2] leaving rank=2"), std::string::npos) << out;
  EXPECT_NE(out.find("dtrun: worker 2 killed by signal 9 (Killed); the job goes on without it"), std::string::npos)
      << out;
  EXPECT_NE(out.find("dtrun: job finished: every other process exited cleanly; the job went on without worker 2"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("the job goes on with 2 of 3 workers"), std::string::npos) << out;
  // 1 + 2: worker 2's 3 is gone from the rounds after it left.
  EXPECT_NE(out.find("[worker 0] pushpull_sum=3 rank=0 workers=3"), std::string::npos) << out;
  EXPECT_NE(out.find("[worker 1] pushpull_sum=3 rank=1 workers=3"), std::string::npos) << out;
  job.expect_nothing_left();
}

TEST(DtrunJob, SigintStopsEverythingWithExitCode130) {
  DtrunProcess job(pushpull_job(2, {"--env-worker", "DTRUN_TEST_HOLD=1"}), "sigint");
  ASSERT_TRUE(job.wait_for_output("[worker 1] holding", 60s)) << job.output();
  const auto sent_at = Clock::now();
  ASSERT_EQ(kill(job.pid(), SIGINT), 0);
  expect_job_failed(job, 20s, 130, "job failed: interrupted by SIGINT", sent_at, 5.0);
}

TEST(DtrunJob, TimeoutStopsTheJobWithExitCode124) {
  DtrunProcess job(pushpull_job(2, {"--env-worker", "DTRUN_TEST_HOLD=1", "--timeout", "3"}), "timeout");
  expect_job_failed(job, 30s, 124, "job failed: timed out after 3 s");
}

TEST(DtrunJob, FailingWorkerExitCodeIsTheJobs) {
  // A worker command that fails at once, before joining the job.
  DtrunProcess job({"-n", "2", "-s", "1", "--", "sh", "-c", "exit 3"}, "exit3");
  const std::optional<int> status = job.wait(30s);
  ASSERT_TRUE(status) << "dtrun did not stop\n" << job.output();
  EXPECT_EQ(exit_code(*status), 3) << job.output();
  EXPECT_TRUE(std::regex_search(job.output(), std::regex("job failed: worker [01] exited with status 3")))
      << job.output();
  job.expect_nothing_left();
}

// Issue 19: --max-restarts starts a failed job again, whole, as torchrun
// does; DT_RESTART_COUNT tells each run which it is. Here the workers fail in
// the first run only.
TEST(DtrunJob, MaxRestartsStartsTheFailedJobAgainWhole) {
  std::vector<std::string> args = {"-n", "2", "-s", "1", "--max-restarts", "2"};
  args.insert(args.end(), kFastHeartbeats.begin(), kFastHeartbeats.end());
  args.push_back("--");
  args.push_back("echo run-$DT_RESTART_COUNT; [ $DT_RESTART_COUNT -ge 1 ] || exit 3; exec " + self_path +
                 " --pushpull-worker");
  DtrunProcess job(args, "restart");
  const std::optional<int> status = job.wait(90s);
  ASSERT_TRUE(status) << "dtrun did not finish\n" << job.output();
  EXPECT_EQ(exit_code(*status), 0) << job.output();
  // The first worker to fail stops the run: the other may not have spoken.
  EXPECT_TRUE(std::regex_search(job.output(), std::regex("\\[worker [01]\\] run-0"))) << job.output();
  for (const char* line : {"dtrun: restarting the whole job (restart 1 of at most 2, DT_RESTART_COUNT=1)",
                           "[worker 0] run-1", "[worker 1] run-1", "[worker 0] pushpull_sum=3",
                           "[worker 1] pushpull_sum=3", "dtrun: job finished (after 1 restart)"}) {
    EXPECT_NE(job.output().find(line), std::string::npos) << line << "\n" << job.output();
  }
  EXPECT_EQ(job.output().find("restart 2 of"), std::string::npos) << job.output();
  job.expect_nothing_left();
}

TEST(DtrunJob, MaxRestartsGivesUpAfterTheLastRestart) {
  DtrunProcess job({"-n", "2", "-s", "1", "--max-restarts", "2", "--", "sh", "-c", "exit 3"}, "give-up");
  const std::optional<int> status = job.wait(60s);
  ASSERT_TRUE(status) << "dtrun did not stop\n" << job.output();
  EXPECT_EQ(exit_code(*status), 3) << job.output();
  EXPECT_NE(job.output().find("restart 2 of at most 2"), std::string::npos) << job.output();
  EXPECT_EQ(job.output().find("restart 3 of"), std::string::npos) << job.output();
  EXPECT_TRUE(std::regex_search(job.output(),
                                std::regex("job failed \\(after 2 restarts\\): worker [01] exited with status 3")))
      << job.output();
  job.expect_nothing_left();
}

TEST(DtrunJob, MaxRestartsLeavesATimeoutAlone) {
  DtrunProcess job(pushpull_job(2, {"--env-worker", "DTRUN_TEST_HOLD=1", "--timeout", "3", "--max-restarts", "2"}),
                   "timeout-no-restart");
  expect_job_failed(job, 30s, 124, "job failed: timed out after 3 s");
  EXPECT_EQ(job.output().find("restarting"), std::string::npos) << job.output();
}

// Ctrl-C while dtrun stops a failed job means the user wants it over.
TEST(DtrunJob, MaxRestartsLeavesAJobInterruptedWhileItStops) {
  // Worker 1 ignores SIGTERM, so stopping the job takes the 3 s grace.
  DtrunProcess job({"-n", "2", "-s", "1", "--max-restarts", "2", "--", "sh", "-c",
                    "if [ $DMLC_WORKER_ID = 0 ]; then sleep 1; exit 3; fi; trap '' TERM; sleep 60"},
                   "interrupted-stop");
  ASSERT_TRUE(job.wait_for_output("worker 0 exited with status 3; stopping the job", 60s)) << job.output();
  ASSERT_EQ(kill(job.pid(), SIGINT), 0);
  const std::optional<int> status = job.wait(30s);
  ASSERT_TRUE(status) << "dtrun did not stop\n" << job.output();
  EXPECT_EQ(exit_code(*status), 3) << job.output();
  EXPECT_NE(job.output().find("interrupted while the failed job stopped: no restart"), std::string::npos)
      << job.output();
  EXPECT_EQ(job.output().find("restarting"), std::string::npos) << job.output();
  job.expect_nothing_left();
}

TEST(DtrunJob, OneQuotedCommandLineRunsThroughTheShell) {
  // As launch.py users write it: the whole command in one argument; the
  // shell expands $DMLC_WORKER_ID, so it is a shell that ran it.
  std::vector<std::string> args = {"-n", "2", "-s", "1"};
  args.insert(args.end(), kFastHeartbeats.begin(), kFastHeartbeats.end());
  args.push_back("--");
  args.push_back("echo shell-ran-worker-$DMLC_WORKER_ID && " + self_path + " --pushpull-worker");
  DtrunProcess job(args, "quoted");
  const std::optional<int> status = job.wait(60s);
  ASSERT_TRUE(status) << "dtrun did not finish\n" << job.output();
  EXPECT_EQ(exit_code(*status), 0) << job.output();
  for (const char* line : {"[worker 0] shell-ran-worker-0", "[worker 1] shell-ran-worker-1",
                           "[worker 0] pushpull_sum=3", "[worker 1] pushpull_sum=3"}) {
    EXPECT_NE(job.output().find(line), std::string::npos) << line << "\n" << job.output();
  }
  job.expect_nothing_left();
}

TEST(DtrunJob, PsVerboseLogsTheNodeTableAndEveryMessage) {
  DtrunProcess job(pushpull_job(2, {"--env", "PS_VERBOSE=2"}), "ps_verbose");
  const std::optional<int> status = job.wait(60s);
  ASSERT_TRUE(status) << "dtrun did not finish\n" << job.output();
  EXPECT_EQ(exit_code(*status), 0) << job.output();
  const std::string out = job.output();
  // Level 1: registrations, the node table as the scheduler published it and
  // as each node received it, the workers' data connections.
  for (const char* line : {"[scheduler] disttrain[PS_VERBOSE]: scheduler: node table published",
                           "[server 0] disttrain[PS_VERBOSE]: server 0: node table from the scheduler at",
                           "[worker 1] disttrain[PS_VERBOSE]: worker 1: data connection to server 0 at"}) {
    EXPECT_NE(out.find(line), std::string::npos) << line << "\n" << out;
  }
  EXPECT_TRUE(std::regex_search(out, std::regex("scheduler: worker \\(pid [0-9]+ on host [^)]*\\) registered")))
      << out;
  // Level 2: every message; each worker's pushpull of key 3 (4 float32
  // values) in round 0, and the scheduler's control messages.
  for (int w = 0; w < 2; ++w) {
    const std::string push = "\\[server 0\\] disttrain\\[PS_VERBOSE\\]: server: Push(Pull)? from worker " +
                             std::to_string(w) + ": key 3 \\[0, 4\\) 16 bytes round [0-9]+";
    EXPECT_TRUE(std::regex_search(out, std::regex(push))) << push << "\n" << out;
  }
  EXPECT_NE(out.find("[scheduler] disttrain[PS_VERBOSE]: scheduler: Shutdown on connection "), std::string::npos) << out;
  // Nobody says PS_VERBOSE means nothing any more.
  EXPECT_EQ(out.find("PS_VERBOSE=2: accepted"), std::string::npos) << out;
  job.expect_nothing_left();
}

// PS_RESEND with a 1 ms timeout while worker 1 takes 5 ms per round: worker
// 0's pushpull waits longer than that every round, so it is resent again and
// again, and the server must answer each repeat without counting it and
// free the copy it replaces (issue 15). 100 rounds, each sum exact, or the
// worker fails; PS_VERBOSE=2 shows the repeats arriving.
TEST(DtrunJob, PsResendRepeatsRequestsWithoutCountingThemTwice) {
  DtrunProcess job(pushpull_job(2, {"--env", "PS_RESEND=1", "--env", "PS_RESEND_TIMEOUT=1", "--env",
                                    "DTRUN_TEST_ROUNDS=100", "--env", "DTRUN_TEST_SLOW_RANK=1", "--env",
                                    "PS_VERBOSE=2"}),
                   "ps_resend");
  const std::optional<int> status = job.wait(120s);
  ASSERT_TRUE(status) << "dtrun did not finish\n" << job.output();
  EXPECT_EQ(exit_code(*status), 0) << job.output();
  for (const char* line : {"[worker 0] pushpull_sum=3", "[worker 1] pushpull_sum=3"}) {
    EXPECT_NE(job.output().find(line), std::string::npos) << line << "\n" << job.output();
  }
  EXPECT_EQ(job.output().find("PS_RESEND=1: accepted"), std::string::npos) << job.output();
  // Worker 0's requests arrived more often than its 100 rounds.
  const std::string out = job.output();
  const std::regex from_worker_0("server: PushPull from worker 0: key 3");
  const auto repeats = std::distance(std::sregex_iterator(out.begin(), out.end(), from_worker_0), std::sregex_iterator());
  EXPECT_GT(repeats, 150) << "too few resends to test anything";
  job.expect_nothing_left();
}

TEST(DtrunJob, JobsStartedTogetherNeverCollideOnPorts) {
  constexpr int kJobs = 3;
  std::vector<std::unique_ptr<DtrunProcess>> jobs;
  for (int j = 0; j < kJobs; ++j) {
    jobs.push_back(std::make_unique<DtrunProcess>(pushpull_job(2), "concurrent" + std::to_string(j)));
  }
  for (auto& job : jobs) {
    const std::optional<int> status = job->wait(120s);
    ASSERT_TRUE(status) << "dtrun did not finish\n" << job->output();
    EXPECT_EQ(exit_code(*status), 0) << job->output();
    // Each worker pushes rank+1: 1 + 2 summed in its own job only.
    EXPECT_NE(job->output().find("[worker 0] pushpull_sum=3"), std::string::npos) << job->output();
    EXPECT_NE(job->output().find("[worker 1] pushpull_sum=3"), std::string::npos) << job->output();
    job->expect_nothing_left();
  }
}

// dtrun --tls: every tcp connection of the job (the scheduler's, and the
// data connections forced onto tcp) is tls+tcp with the job's throw-away
// certificate, from a private directory that is gone when dtrun ends.
TEST(DtrunJob, TlsJobPushpullsOverTlsTcpAndRemovesItsCertificates) {
  std::vector<std::string> args = {"-n", "2", "-s", "1", "--tls", "--env", "PS_VERBOSE=1",
                                   "--env", "DT_PS_DATA_TRANSPORT=tcp"};
  args.insert(args.end(), kFastHeartbeats.begin(), kFastHeartbeats.end());
  args.push_back("--");
  args.push_back("echo tls-files $(stat -c %a \"$(dirname \"$DT_TLS_CERT_FILE\")\" \"$DT_TLS_KEY_FILE\") "
                 "dir=$(dirname \"$DT_TLS_CERT_FILE\") && exec " + self_path + " --pushpull-worker");
  DtrunProcess job(args, "tls");
  const std::optional<int> status = job.wait(90s);
  ASSERT_TRUE(status) << "dtrun did not finish\n" << job.output();
  const std::string out = job.output();
  EXPECT_EQ(exit_code(*status), 0) << out;
  for (const char* line : {"[worker 0] pushpull_sum=3", "[worker 1] pushpull_sum=3",
                           "[server 0] disttrain[PS_VERBOSE]: server 0: node table from the scheduler at tls+tcp://",
                           "[worker 1] disttrain[PS_VERBOSE]: worker 1: data connection to server 0 at tls+tcp://",
                           "[worker 0] tls-files 700 600 dir="}) {
    EXPECT_NE(out.find(line), std::string::npos) << line << "\n" << out;
  }
  std::smatch dir;
  ASSERT_TRUE(std::regex_search(out, dir, std::regex("tls-files 700 600 dir=(\\S+)"))) << out;
  struct stat st {};
  EXPECT_NE(stat(dir[1].str().c_str(), &st), 0) << dir[1] << " outlived the job";
  job.expect_nothing_left();
}

}  // namespace

int main(int argc, char** argv) { return dt::test::pushpull_worker_or_tests(argc, argv); }
