// The supervisor's decisions about failed processes, over real children
// (/bin/sh): which failures the job goes on after, and which stop it.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "environment.h"
#include "signal_pipe.h"
#include "supervisor.h"
#include "temp_dir.h"

namespace dt::dtrun {
namespace {

using std::chrono::seconds;

SupervisorSettings quick_settings(int tolerated_server_losses) {
  SupervisorSettings settings;
  settings.grace = std::chrono::milliseconds(1000);
  settings.tolerated_server_losses = tolerated_server_losses;
  return settings;
}

ChildSpec shell(ProcessName name, const std::string& script) {
  return ChildSpec{std::move(name), {"/bin/sh", "-c", script}, current_environment()};
}

// A child that runs until the gate file exists, then exits with code.
ChildSpec gated(ProcessName name, const std::string& gate, int code) {
  return shell(std::move(name),
               "while [ ! -e '" + gate + "' ]; do sleep 0.02; done; exit " + std::to_string(code));
}

Outcome deadline_passed() { return Outcome{124, "deadline passed"}; }

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

}  // namespace
}  // namespace dt::dtrun
