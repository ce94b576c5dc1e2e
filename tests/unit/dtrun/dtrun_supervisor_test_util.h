// What the supervisor tests share: settings, shell children (gated or
// rejoining) and reading what they wrote.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "environment.h"
#include "signal_pipe.h"
#include "supervisor.h"
#include "temp_dir.h"

namespace dt::dtrun::dtrun_supervisor_test {

using std::chrono::seconds;

inline SupervisorSettings quick_settings(int tolerated_server_losses) {
  SupervisorSettings settings;
  settings.grace = std::chrono::milliseconds(1000);
  settings.tolerated_server_losses = tolerated_server_losses;
  return settings;
}

inline ChildSpec shell(ProcessName name, const std::string& script) {
  return ChildSpec{std::move(name), {"/bin/sh", "-c", script}, current_environment()};
}

// A child that runs until the gate file exists, then exits with code.
inline ChildSpec gated(ProcessName name, const std::string& gate, int code) {
  return shell(std::move(name),
               "while [ ! -e '" + gate + "' ]; do sleep 0.02; done; exit " + std::to_string(code));
}

inline Outcome deadline_passed() { return Outcome{124, "deadline passed"}; }

// Lets the children waiting on gate go, and expects the job to end cleanly.
inline void open_gate_and_expect_a_clean_end(Supervisor& supervisor, const std::string& gate) {
  std::ofstream(gate).put('\n');
  const std::optional<Outcome> end =
      supervisor.run_until([&] { return supervisor.all_exited(); }, Clock::now() + seconds(20), deadline_passed);
  EXPECT_FALSE(end.has_value()) << end->message;
}

// DT_WORKER_LOSS=continue with a --max-restarts budget.
inline SupervisorSettings rejoin_settings(int max_restarts, bool continue_after_worker_loss = true) {
  SupervisorSettings settings = quick_settings(0);
  settings.continue_after_worker_loss = continue_after_worker_loss;
  settings.max_restarts = max_restarts;
  return settings;
}

// A worker as a launcher starts it, with its rank in DMLC_WORKER_ID.
inline ChildSpec worker(int rank, const std::string& script) {
  ChildSpec spec = shell({"worker", rank}, script);
  spec.env["DMLC_WORKER_ID"] = std::to_string(rank);
  return spec;
}

// Process 1 of role is killed at its first run; started again, it waits
// until process 0 has finished and then fails: it finds the job over.
// Process 0 finishes only once process 1 runs again: waiting for the first
// run's marker raced the kill, and a process 0 that exited before the kill
// was seen left no running job to restart process 1 into.
inline void start_one_that_finds_the_job_over(Supervisor& supervisor, const std::string& role, const TempDir& dir) {
  const std::string marker = dir.path() + "/failed-once";
  const std::string restarted = dir.path() + "/" + role + "-1-restarted";
  const std::string done = dir.path() + "/" + role + "-0-done";
  supervisor.start(shell({role, 0}, "while [ ! -e '" + restarted + "' ]; do sleep 0.02; done; touch '" + done +
                                        "'; exit 0"));
  ChildSpec again = shell({role, 1}, "if [ -e '" + marker + "' ]; then"
                                     "  touch '" + restarted + "';"
                                     "  while [ ! -e '" + done + "' ]; do sleep 0.02; done; sleep 0.5; exit 1;"
                                     "fi; touch '" + marker + "'; kill -9 $$");
  if (role == "worker") again.env["DMLC_WORKER_ID"] = "1";
  supervisor.start(again);
}

inline std::string read_all(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// DT_SERVER_REPLICATION=1 with a --max-restarts budget: failed servers are
// started again to rejoin as replicas.
inline SupervisorSettings server_rejoin_settings(int max_restarts, int tolerated_server_losses) {
  SupervisorSettings settings = quick_settings(tolerated_server_losses);
  settings.servers_rejoin = true;
  settings.max_restarts = max_restarts;
  return settings;
}

}  // namespace dt::dtrun::dtrun_supervisor_test
