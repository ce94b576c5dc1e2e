// The supervisor's decisions about failed processes, over real children
// (/bin/sh): which failures the job goes on after, which workers and servers
// it starts again to rejoin the job, and which failures stop it.
// Servers started again: dtrun_supervisor_server_restart_test.cc.
#include <gtest/gtest.h>

#include "dtrun_supervisor_test_util.h"

namespace dt::dtrun {
namespace {

using namespace dtrun_supervisor_test;

TEST(DtrunSupervisor, OneServerLossIsToleratedWithReplicationAndASecondStopsTheJob) {
  SignalPipe signals;
  TempDir dir("dtrun-supervisor-test");
  const std::string gate = dir.path() + "/gate";
  const std::string never = dir.path() + "/never";
  Supervisor supervisor(signals, quick_settings(1));
  supervisor.start(gated({"scheduler"}, never, 0));
  const pid_t lost = supervisor.start(shell({"server", 0}, "exit 1"));
  supervisor.start(gated({"server", 1}, gate, 3));
  supervisor.start(gated({"server", 2}, never, 0));

  testing::internal::CaptureStderr();
  const std::optional<Outcome> first =
      supervisor.run_until([&] { return supervisor.has_exited(lost); }, Clock::now() + seconds(20), deadline_passed);
  const std::string said = testing::internal::GetCapturedStderr();
  EXPECT_FALSE(first.has_value()) << first->message;
  EXPECT_EQ(supervisor.lost_servers(), std::vector<std::string>{"server 0"});
  EXPECT_TRUE(supervisor.lost_workers().empty());
  EXPECT_NE(said.find("dtrun: server 0 exited with status 1; the job goes on with the replicas of its keys "
                      "(DT_SERVER_REPLICATION=1)\n"),
            std::string::npos)
      << said;
  EXPECT_EQ(supervisor.still_running(), "scheduler, server 1, server 2");

  // One replica per key part: a second server lost takes keys with it, even
  // while a third still runs.
  std::ofstream(gate).put('\n');
  const std::optional<Outcome> second =
      supervisor.run_until([&] { return supervisor.all_exited(); }, Clock::now() + seconds(20), deadline_passed);
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->exit_code, 3);
  EXPECT_EQ(second->message, "server 1 exited with status 3");
  EXPECT_TRUE(second->process_failed);
  EXPECT_EQ(supervisor.lost_servers().size(), 1u);
}

TEST(DtrunSupervisor, AServerLossStopsTheJobWithoutReplication) {
  SignalPipe signals;
  TempDir dir("dtrun-supervisor-test");
  Supervisor supervisor(signals, quick_settings(0));
  supervisor.start(gated({"server", 0}, dir.path() + "/gate", 0));
  supervisor.start(shell({"server", 1}, "exit 1"));
  const std::optional<Outcome> outcome =
      supervisor.run_until([&] { return supervisor.all_exited(); }, Clock::now() + seconds(20), deadline_passed);
  ASSERT_TRUE(outcome.has_value());
  EXPECT_EQ(outcome->exit_code, 1);
  EXPECT_EQ(outcome->message, "server 1 exited with status 1");
  EXPECT_TRUE(supervisor.lost_servers().empty());
}

TEST(DtrunSupervisor, TheSchedulerOrTheLastServerStillStopsAReplicatedJob) {
  SignalPipe signals;
  TempDir dir("dtrun-supervisor-test");
  const std::string gate = dir.path() + "/gate";
  {
    Supervisor supervisor(signals, quick_settings(1));
    supervisor.start(shell({"scheduler"}, "exit 5"));
    supervisor.start(gated({"server", 0}, gate, 0));
    supervisor.start(gated({"server", 1}, gate, 0));
    const std::optional<Outcome> outcome =
        supervisor.run_until([&] { return supervisor.all_exited(); }, Clock::now() + seconds(20), deadline_passed);
    ASSERT_TRUE(outcome.has_value());
    EXPECT_EQ(outcome->message, "scheduler exited with status 5");
  }
  {
    // No other server runs to hold the replicas.
    Supervisor supervisor(signals, quick_settings(1));
    supervisor.start(gated({"worker", 0}, gate, 0));
    supervisor.start(shell({"server", 0}, "kill -9 $$"));
    const std::optional<Outcome> outcome =
        supervisor.run_until([&] { return supervisor.all_exited(); }, Clock::now() + seconds(20), deadline_passed);
    ASSERT_TRUE(outcome.has_value());
    EXPECT_EQ(outcome->exit_code, 137);
    EXPECT_EQ(outcome->message, "server 0 killed by signal 9 (Killed)");
    EXPECT_TRUE(supervisor.lost_servers().empty());
  }
}

// Issue: with --worker-loss continue and --max-restarts, a failed worker is
// started again alone, as it was, and rejoins the job that still runs.
TEST(DtrunSupervisor, AFailedWorkerStartsAgainAloneAndRejoinsUnderContinueWithRestartsLeft) {
  SignalPipe signals;
  TempDir dir("dtrun-supervisor-test");
  const std::string marker = dir.path() + "/failed-once";
  const std::string seen = dir.path() + "/seen";
  SupervisorSettings settings = rejoin_settings(1);
  settings.log_dir = dir.path() + "/logs";
  Supervisor supervisor(signals, settings);
  // Runs until the restarted worker 1 has reported: the job it rejoins.
  supervisor.start(gated({"worker", 0}, seen, 0));
  // Killed at its first run; its second reports DT_WORKER_RESTART_COUNT,
  // its rank and its process group (in /proc/PID/stat, the third field
  // after the command's name).
  supervisor.start(worker(1, "if [ -e '" + marker + "' ]; then"
                             "  echo second run;"
                             "  pgid=$(sed 's/.*) //' /proc/$$/stat | cut -d' ' -f3);"
                             "  echo \"$DT_WORKER_RESTART_COUNT $DMLC_WORKER_ID $pgid\" > '" + seen + ".tmp';"
                             "  mv '" + seen + ".tmp' '" + seen + "'; exit 0;"
                             "fi;"
                             "echo \"first run ${DT_WORKER_RESTART_COUNT-unset}\"; touch '" + marker + "'; kill -9 $$"));

  testing::internal::CaptureStderr();
  const std::optional<Outcome> outcome =
      supervisor.run_until([&] { return supervisor.all_exited(); }, Clock::now() + seconds(20), deadline_passed);
  const std::string said = testing::internal::GetCapturedStderr();
  EXPECT_FALSE(outcome.has_value()) << outcome->message;
  EXPECT_NE(said.find("dtrun: worker 1 killed by signal 9 (Killed); starting it again to rejoin the running job "
                      "(restart 1 of at most 1, DT_WORKER_LOSS=continue)\n"),
            std::string::npos)
      << said;
  EXPECT_EQ(read_all(seen), "1 1 " + std::to_string(supervisor.process_group()) + "\n");
  EXPECT_EQ(supervisor.worker_restarts(), 1);
  EXPECT_TRUE(supervisor.lost_workers().empty());
  const std::vector<RestartedProcess> rejoined = supervisor.rejoined_workers();
  ASSERT_EQ(rejoined.size(), 1u);
  EXPECT_EQ(rejoined[0].name, "worker 1");
  EXPECT_EQ(rejoined[0].restarts, 1);
  // One log file for both runs: the restart appends to it.
  const std::string log = read_all(settings.log_dir + "/worker-1.log");
  EXPECT_NE(log.find("first run unset\n"), std::string::npos) << log;
  EXPECT_NE(log.find("second run\n"), std::string::npos) << log;
}

// Killed near the job's end, a worker started again finds every other
// worker gone (the scheduler refuses it): the job finished without it.
TEST(DtrunSupervisor, AWorkerStartedAgainThatFindsTheJobOverDoesNotFailIt) {
  SignalPipe signals;
  TempDir dir("dtrun-supervisor-test");
  Supervisor supervisor(signals, rejoin_settings(1));
  start_one_that_finds_the_job_over(supervisor, "worker", dir);
  testing::internal::CaptureStderr();
  const std::optional<Outcome> outcome =
      supervisor.run_until([&] { return supervisor.all_exited(); }, Clock::now() + seconds(20), deadline_passed);
  const std::string said = testing::internal::GetCapturedStderr();
  EXPECT_FALSE(outcome.has_value()) << outcome->message;
  EXPECT_NE(said.find("dtrun: worker 1 exited with status 1 after the job's other workers had finished: there was "
                      "no running job to rejoin (DT_WORKER_LOSS=continue)\n"),
            std::string::npos)
      << said;
  EXPECT_EQ(supervisor.lost_workers(), std::vector<std::string>{"worker 1"});
}

// The same after another worker had been killed and started again: its
// killed first run does not count as a worker of the job that failed (the
// chaos test's seed 383 failed the job so).
TEST(DtrunSupervisor, AWorkerStartedAgainFindsTheJobOverAfterAnotherWasStartedAgainToo) {
  SignalPipe signals;
  TempDir dir("dtrun-supervisor-test");
  Supervisor supervisor(signals, rejoin_settings(2));
  const std::string killed0 = dir.path() + "/worker-0-killed", killed1 = dir.path() + "/worker-1-killed";
  const std::string restarted1 = dir.path() + "/worker-1-restarted", done = dir.path() + "/worker-0-done";
  supervisor.start(shell({"worker", 0}, "if [ -e '" + killed0 + "' ]; then"
                                        "  while [ ! -e '" + restarted1 + "' ]; do sleep 0.02; done;"
                                        "  touch '" + done + "'; exit 0;"
                                        "fi; touch '" + killed0 + "'; kill -9 $$"));
  ChildSpec one = shell({"worker", 1}, "if [ -e '" + killed1 + "' ]; then"
                                       "  touch '" + restarted1 + "';"
                                       "  while [ ! -e '" + done + "' ]; do sleep 0.02; done; sleep 0.5; exit 1;"
                                       "fi; while [ ! -e '" + killed0 + "' ]; do sleep 0.02; done;"
                                       "touch '" + killed1 + "'; kill -9 $$");
  one.env["DMLC_WORKER_ID"] = "1";
  supervisor.start(one);
  testing::internal::CaptureStderr();
  const std::optional<Outcome> outcome =
      supervisor.run_until([&] { return supervisor.all_exited(); }, Clock::now() + seconds(20), deadline_passed);
  const std::string said = testing::internal::GetCapturedStderr();
  EXPECT_FALSE(outcome.has_value()) << outcome->message << "\n" << said;
  EXPECT_EQ(supervisor.worker_restarts(), 2) << said;
  EXPECT_NE(said.find("dtrun: worker 1 exited with status 1 after the job's other workers had finished: there was "
                      "no running job to rejoin (DT_WORKER_LOSS=continue)\n"),
            std::string::npos)
      << said;
}

TEST(DtrunSupervisor, AWorkerThatFailsAgainOnceTheRestartsAreSpentIsLeftOutAsBefore) {
  SignalPipe signals;
  TempDir dir("dtrun-supervisor-test");
  const std::string gate = dir.path() + "/gate";
  Supervisor supervisor(signals, rejoin_settings(1));
  supervisor.start(gated({"worker", 0}, gate, 0));
  supervisor.start(worker(1, "exit 3"));

  testing::internal::CaptureStderr();
  const std::optional<Outcome> lost = supervisor.run_until([&] { return !supervisor.lost_workers().empty(); },
                                                           Clock::now() + seconds(20), deadline_passed);
  const std::string said = testing::internal::GetCapturedStderr();
  EXPECT_FALSE(lost.has_value()) << lost->message;
  const std::string restarted = "dtrun: worker 1 exited with status 3; starting it again to rejoin the running job "
                                "(restart 1 of at most 1, DT_WORKER_LOSS=continue)\n";
  const std::string left_out = "dtrun: worker 1 exited with status 3; the job goes on without it "
                               "(DT_WORKER_LOSS=continue)\n";
  EXPECT_NE(said.find(restarted), std::string::npos) << said;
  EXPECT_GT(said.find(left_out), said.find(restarted)) << said;
  EXPECT_EQ(supervisor.worker_restarts(), 1);
  EXPECT_EQ(supervisor.lost_workers(), std::vector<std::string>{"worker 1"});
  EXPECT_TRUE(supervisor.rejoined_workers().empty());

  open_gate_and_expect_a_clean_end(supervisor, gate);
}

TEST(DtrunSupervisor, RestartsOfEarlierRunsOfTheJobSpendTheSameBudget) {
  SignalPipe signals;
  TempDir dir("dtrun-supervisor-test");
  SupervisorSettings settings = rejoin_settings(2);
  settings.restarts_done = 2;  // e.g. a worker restart, then a whole-job restart
  Supervisor supervisor(signals, settings);
  supervisor.start(gated({"worker", 0}, dir.path() + "/gate", 0));
  supervisor.start(worker(1, "exit 3"));
  const std::optional<Outcome> lost = supervisor.run_until([&] { return !supervisor.lost_workers().empty(); },
                                                           Clock::now() + seconds(20), deadline_passed);
  EXPECT_FALSE(lost.has_value()) << lost->message;
  EXPECT_EQ(supervisor.worker_restarts(), 0);
  EXPECT_EQ(supervisor.lost_workers(), std::vector<std::string>{"worker 1"});
}

TEST(DtrunSupervisor, WithoutWorkerLossContinueAFailedWorkerStopsTheJobForAWholeRestart) {
  SignalPipe signals;
  TempDir dir("dtrun-supervisor-test");
  Supervisor supervisor(signals, rejoin_settings(3, false));
  supervisor.start(gated({"worker", 0}, dir.path() + "/gate", 0));
  supervisor.start(worker(1, "exit 3"));
  testing::internal::CaptureStderr();
  const std::optional<Outcome> outcome =
      supervisor.run_until([&] { return supervisor.all_exited(); }, Clock::now() + seconds(20), deadline_passed);
  const std::string said = testing::internal::GetCapturedStderr();
  ASSERT_TRUE(outcome.has_value());
  EXPECT_EQ(outcome->exit_code, 3);
  EXPECT_EQ(outcome->message, "worker 1 exited with status 3");
  EXPECT_TRUE(outcome->process_failed);
  EXPECT_EQ(supervisor.worker_restarts(), 0);
  EXPECT_EQ(said.find("starting it again"), std::string::npos) << said;
}

TEST(DtrunSupervisor, NoWorkerStartsAgainWhenNoOtherWorkerRunsOrTheJobIsStopping) {
  SignalPipe signals;
  TempDir dir("dtrun-supervisor-test");
  const std::string gate = dir.path() + "/gate";
  {
    // Every other worker has finished: there is no running job to rejoin.
    Supervisor supervisor(signals, rejoin_settings(3));
    const pid_t done = supervisor.start(worker(0, "exit 0"));
    supervisor.start(gated({"worker", 1}, gate, 3));
    ASSERT_FALSE(supervisor.run_until([&] { return supervisor.has_exited(done); }, Clock::now() + seconds(20),
                                      deadline_passed));
    std::ofstream(gate).put('\n');
    const std::optional<Outcome> outcome =
        supervisor.run_until([&] { return supervisor.all_exited(); }, Clock::now() + seconds(20), deadline_passed);
    ASSERT_TRUE(outcome.has_value());
    EXPECT_EQ(outcome->message, "worker 1 exited with status 3");
    EXPECT_TRUE(outcome->process_failed);
    EXPECT_EQ(supervisor.worker_restarts(), 0);
  }
  {
    // A server failed: the job stops, and a worker that fails meanwhile (as
    // the ssh launcher waits for the sessions to report) is not restarted.
    std::remove(gate.c_str());
    Supervisor supervisor(signals, rejoin_settings(3));
    supervisor.start(shell({"server", 0}, "exit 1"));
    supervisor.start(gated({"worker", 0}, dir.path() + "/never", 0));
    const pid_t failing = supervisor.start(gated({"worker", 1}, gate, 3));
    const std::optional<Outcome> stopping =
        supervisor.run_until([] { return false; }, Clock::now() + seconds(20), deadline_passed);
    ASSERT_TRUE(stopping.has_value());
    EXPECT_EQ(stopping->message, "server 0 exited with status 1");
    std::ofstream(gate).put('\n');
    supervisor.run_until([&] { return supervisor.has_exited(failing); }, Clock::now() + seconds(20),
                         deadline_passed);
    EXPECT_EQ(supervisor.worker_restarts(), 0);
    EXPECT_EQ(supervisor.still_running(), "worker 0");
  }
}

}  // namespace
}  // namespace dt::dtrun
