// The supervisor starting failed servers again to rejoin as replicas, their
// restart budget shared with the workers', and servers that find the job over.
#include <gtest/gtest.h>

#include "dtrun_supervisor_test_util.h"

namespace dt::dtrun {
namespace {

using namespace dtrun_supervisor_test;

// Server rejoin: with DT_SERVER_REPLICATION=1 and --max-restarts, a failed
// server is started again alone, as it was, and the scheduler takes it in
// the lost server's place as a replica of its keys.
TEST(DtrunSupervisor, AFailedServerStartsAgainAloneAndRejoinsAsAReplicaWithRestartsLeft) {
  SignalPipe signals;
  TempDir dir("dtrun-supervisor-test");
  const std::string marker = dir.path() + "/failed-once";
  const std::string seen = dir.path() + "/seen";
  SupervisorSettings settings = server_rejoin_settings(1, 1);
  settings.log_dir = dir.path() + "/logs";
  Supervisor supervisor(signals, settings);
  // Run until the restarted server 1 has reported: the job it rejoins. A
  // file of the first run would race its kill.
  supervisor.start(gated({"scheduler"}, seen, 0));
  supervisor.start(gated({"server", 0}, seen, 0));
  // Killed at its first run; its second reports DT_WORKER_RESTART_COUNT.
  supervisor.start(shell({"server", 1}, "if [ -e '" + marker + "' ]; then"
                                        "  echo second run;"
                                        "  echo \"$DT_WORKER_RESTART_COUNT\" > '" + seen + ".tmp';"
                                        "  mv '" + seen + ".tmp' '" + seen + "'; exit 0;"
                                        "fi;"
                                        "echo \"first run ${DT_WORKER_RESTART_COUNT-unset}\"; touch '" + marker +
                                        "'; kill -9 $$"));

  testing::internal::CaptureStderr();
  const std::optional<Outcome> outcome =
      supervisor.run_until([&] { return supervisor.all_exited(); }, Clock::now() + seconds(20), deadline_passed);
  const std::string said = testing::internal::GetCapturedStderr();
  EXPECT_FALSE(outcome.has_value()) << outcome->message;
  EXPECT_NE(said.find("dtrun: server 1 killed by signal 9 (Killed); starting it again to rejoin the running job as a "
                      "replica (restart 1 of at most 1, DT_SERVER_REPLICATION=1)\n"),
            std::string::npos)
      << said;
  EXPECT_EQ(read_all(seen), "1\n");
  EXPECT_EQ(supervisor.server_restarts(), 1);
  EXPECT_EQ(supervisor.worker_restarts(), 0);
  EXPECT_EQ(supervisor.restarts(), 1);
  // It came back: no loss, and the budget of losses is whole.
  EXPECT_TRUE(supervisor.lost_servers().empty());
  const std::vector<RestartedProcess> rejoined = supervisor.rejoined_servers();
  ASSERT_EQ(rejoined.size(), 1u);
  EXPECT_EQ(rejoined[0].name, "server 1");
  EXPECT_EQ(rejoined[0].restarts, 1);
  EXPECT_TRUE(supervisor.rejoined_workers().empty());
  // One log file for both runs: the restart appends to it.
  const std::string log = read_all(settings.log_dir + "/server-1.log");
  EXPECT_NE(log.find("first run unset\n"), std::string::npos) << log;
  EXPECT_NE(log.find("second run\n"), std::string::npos) << log;
}

TEST(DtrunSupervisor, AServerThatFailsAgainOnceTheRestartsAreSpentIsAToleratedLoss) {
  SignalPipe signals;
  TempDir dir("dtrun-supervisor-test");
  const std::string gate = dir.path() + "/gate";
  const std::string runs = dir.path() + "/runs";
  Supervisor supervisor(signals, server_rejoin_settings(1, 1));
  supervisor.start(gated({"scheduler"}, gate, 0));
  supervisor.start(gated({"server", 0}, gate, 0));
  // Every run says so in runs; the first is killed, the next ones fail.
  supervisor.start(shell({"server", 1}, "echo run >> '" + runs + "'; if [ \"${DT_WORKER_RESTART_COUNT-0}\" = 0 ]; "
                                        "then kill -9 $$; fi; exit 3"));

  testing::internal::CaptureStderr();
  const std::optional<Outcome> lost = supervisor.run_until([&] { return !supervisor.lost_servers().empty(); },
                                                           Clock::now() + seconds(20), deadline_passed);
  const std::string said = testing::internal::GetCapturedStderr();
  EXPECT_FALSE(lost.has_value()) << lost->message;
  const std::string restarted = "dtrun: server 1 killed by signal 9 (Killed); starting it again to rejoin the running "
                                "job as a replica (restart 1 of at most 1, DT_SERVER_REPLICATION=1)\n";
  const std::string left_out = "dtrun: server 1 exited with status 3; the job goes on with the replicas of its keys "
                               "(DT_SERVER_REPLICATION=1)\n";
  EXPECT_NE(said.find(restarted), std::string::npos) << said;
  EXPECT_GT(said.find(left_out), said.find(restarted)) << said;
  EXPECT_EQ(said.find("starting it again", said.find(restarted) + restarted.size()), std::string::npos) << said;
  EXPECT_EQ(supervisor.server_restarts(), 1);
  EXPECT_EQ(supervisor.lost_servers(), std::vector<std::string>{"server 1"});
  EXPECT_TRUE(supervisor.rejoined_servers().empty());

  open_gate_and_expect_a_clean_end(supervisor, gate);
  // No third start.
  EXPECT_EQ(read_all(runs), "run\nrun\n");
  EXPECT_EQ(supervisor.server_restarts(), 1);
}

// Workers and servers restarted in place, and earlier runs of the job,
// spend one budget.
TEST(DtrunSupervisor, RestartsOfServersAndWorkersSpendTheSameBudget) {
  SignalPipe signals;
  TempDir dir("dtrun-supervisor-test");
  const std::string gate = dir.path() + "/gate";
  const std::string worker_gate = dir.path() + "/worker-gate";
  SupervisorSettings settings = server_rejoin_settings(2, 1);
  settings.continue_after_worker_loss = true;
  settings.restarts_done = 1;  // e.g. a whole-job restart
  Supervisor supervisor(signals, settings);
  supervisor.start(gated({"server", 0}, gate, 0));
  supervisor.start(shell({"server", 1}, "exit 3"));
  supervisor.start(gated({"worker", 0}, gate, 0));
  supervisor.start(gated({"worker", 1}, worker_gate, 3));

  testing::internal::CaptureStderr();
  const std::optional<Outcome> server_lost = supervisor.run_until(
      [&] { return !supervisor.lost_servers().empty(); }, Clock::now() + seconds(20), deadline_passed);
  EXPECT_FALSE(server_lost.has_value()) << server_lost->message;
  // The server's restart spent what was left; worker 1 fails only now.
  std::ofstream(worker_gate).put('\n');
  const std::optional<Outcome> worker_lost = supervisor.run_until(
      [&] { return !supervisor.lost_workers().empty(); }, Clock::now() + seconds(20), deadline_passed);
  const std::string said = testing::internal::GetCapturedStderr();
  EXPECT_FALSE(worker_lost.has_value()) << worker_lost->message;
  EXPECT_NE(said.find("dtrun: server 1 exited with status 3; starting it again to rejoin the running job as a replica "
                      "(restart 2 of at most 2, DT_SERVER_REPLICATION=1)\n"),
            std::string::npos)
      << said;
  EXPECT_NE(said.find("dtrun: worker 1 exited with status 3; the job goes on without it (DT_WORKER_LOSS=continue)\n"),
            std::string::npos)
      << said;
  EXPECT_EQ(supervisor.restarts(), 1);
  EXPECT_EQ(supervisor.server_restarts(), 1);
  EXPECT_EQ(supervisor.worker_restarts(), 0);
  EXPECT_EQ(supervisor.lost_servers(), std::vector<std::string>{"server 1"});

  open_gate_and_expect_a_clean_end(supervisor, gate);
}

// Without servers_rejoin (no replication, or a launcher run before it), a
// failed server is tolerated or stops the job as before, restarts or not,
// even with workers restarted in place.
TEST(DtrunSupervisor, WithoutServersRejoinAFailedServerIsNotStartedAgain) {
  SignalPipe signals;
  TempDir dir("dtrun-supervisor-test");
  const std::string gate = dir.path() + "/gate";
  SupervisorSettings settings = rejoin_settings(3);
  settings.tolerated_server_losses = 1;
  Supervisor supervisor(signals, settings);
  supervisor.start(gated({"server", 0}, gate, 0));
  supervisor.start(shell({"server", 1}, "exit 3"));

  testing::internal::CaptureStderr();
  const std::optional<Outcome> lost = supervisor.run_until([&] { return !supervisor.lost_servers().empty(); },
                                                           Clock::now() + seconds(20), deadline_passed);
  const std::string said = testing::internal::GetCapturedStderr();
  EXPECT_FALSE(lost.has_value()) << lost->message;
  EXPECT_EQ(said.find("starting it again"), std::string::npos) << said;
  EXPECT_NE(said.find("dtrun: server 1 exited with status 3; the job goes on with the replicas of its keys "
                      "(DT_SERVER_REPLICATION=1)\n"),
            std::string::npos)
      << said;
  EXPECT_EQ(supervisor.restarts(), 0);

  open_gate_and_expect_a_clean_end(supervisor, gate);
}

// Killed near the job's end, a server started again finds every other
// server gone: the job finished on the replicas of its keys.
TEST(DtrunSupervisor, AServerStartedAgainThatFindsTheJobOverDoesNotFailIt) {
  SignalPipe signals;
  TempDir dir("dtrun-supervisor-test");
  Supervisor supervisor(signals, server_rejoin_settings(1, 1));
  start_one_that_finds_the_job_over(supervisor, "server", dir);
  testing::internal::CaptureStderr();
  const std::optional<Outcome> outcome =
      supervisor.run_until([&] { return supervisor.all_exited(); }, Clock::now() + seconds(20), deadline_passed);
  const std::string said = testing::internal::GetCapturedStderr();
  EXPECT_FALSE(outcome.has_value()) << outcome->message;
  EXPECT_NE(said.find("dtrun: server 1 exited with status 1 after the job's other servers had finished: there was "
                      "no running job to rejoin (DT_SERVER_REPLICATION=1)\n"),
            std::string::npos)
      << said;
  EXPECT_EQ(supervisor.lost_servers(), std::vector<std::string>{"server 1"});
  EXPECT_TRUE(supervisor.rejoined_servers().empty());
}

}  // namespace
}  // namespace dt::dtrun
