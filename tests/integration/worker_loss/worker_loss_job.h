// What the worker-loss tests and their worker processes share: the job's
// rounds and sizes (the expected weights follow from them), the fixture that
// starts the job's processes, and the worker processes' entry point.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/context.h"
#include "dt_c_api.h"
#include "core/error.h"
#include "core/ndarray.h"
#include "kvstore/kvstore_factory.h"
#include "optim/optimizer_config.h"
#include "../process_harness.h"
#include "ps/job/environment_options.h"
#include "../rank_sum_job.h"

namespace dt::ps::worker_loss_test {

using core::Error;
using test::Child;
using test::read_file;
using namespace std::chrono_literals;

// This program's path, for the fixture to start member processes of it.
inline std::string self_path;
inline constexpr int kRounds = 6;
inline constexpr int kLeaverRounds = 2;  // worker 2's rounds before it leaves
inline constexpr float kInit = 100.0f;
// Key 1 is larger than the big-array bound below: split across both servers.
inline const std::vector<int64_t> kSizes = {4, 3000};

// A worker: kRounds pushpulls, except worker 2, which after kLeaverRounds
// either ends its process without a goodbye (DT_TEST_LEAVE=exit) or says
// "stalling" and pauses, for the test to stop it with SIGSTOP past the
// heartbeat timeout (DT_TEST_LEAVE=stall).
// DT_TEST_LEAVE=rejoin: kJoinRounds rounds, each after a pause so that a
// worker started in worker 2's place after it left finds the job running;
// that one (DT_TEST_JOINER=1) runs the rounds after the one it joined at.
inline constexpr int kJoinRounds = 80;

// The "allreduce" store (no servers): the workers apply sgd with rate 1
// themselves to the sums it returns, so the weights follow the same rule.
// Key 2 is large enough for the ring (the others use recursive doubling);
// the three keys make one bucket, one all-reduce per round, so a round
// counts worker 2 on every key or on none.
// Worker 2 leaves after kLeaverRounds (DT_TEST_LEAVE=exit), or runs until
// the test kills it (kill: kKillRounds, each after a pause, so that the kill
// lands at a drawn point of the job, most likely inside a collective).
inline const std::vector<int64_t> kAllreduceSizes = {4, 3000, 40000};
inline constexpr int kKillRounds = 60;

// A failed call, as the C++ workers' errors: worker_main reports it.
inline void must(dt_status status) {
  if (status != DT_OK) throw Error(static_cast<core::ErrorCode>(status), dt_last_error());
}

// A trainer's loop of its own (dt_trainer_train_batch) over an "allreduce"
// store, with dt_trainer_admit_joining_workers before each batch: sgd with
// momentum on a small MLP, each worker's batch drawn from its rank and the
// step. Every worker writes its checkpoint at the end; they must be the
// same bytes, the joined worker's too.
inline constexpr int kTrainerSteps = 60;

// A member process of the job (--loss-worker): the C++ workers, or the C API
// ones when DT_TEST_API says so (worker_loss/workers.cc).
int worker_main();

class WorkerLoss : public test::JobProcesses {
 protected:
  // api: "" (the C++ workers above), or DT_TEST_API's "kvstore" or "trainer".
  std::map<std::string, std::string> job(const std::string& store, const std::string& leave,
                                         const std::string& api = "",
                                         const std::map<std::string, std::string>& extra = {}) {
    const int servers = store == "allreduce" ? 0 : 2;
    std::map<std::string, std::string> env = test::fast_job_env(servers, 3, "2");
    env["DT_REQUEST_TIMEOUT_S"] = "30";
    env["DT_BIGARRAY_BOUND_BYTES"] = "4096";
    env["DT_WORKER_LOSS"] = "continue";
    env["DT_TEST_STORE"] = store;
    env["DT_TEST_LEAVE"] = leave;
    if (!api.empty()) env["DT_TEST_API"] = api;
    for (const auto& [name, value] : extra) env[name] = value;
    const std::string port = start_tcp_scheduler(env);
    env["DMLC_PS_ROOT_URI"] = "127.0.0.1";
    env["DMLC_PS_ROOT_PORT"] = port;
    auto server = env;
    server["DMLC_ROLE"] = "server";
    for (int s = 0; s < servers; ++s) spawn(dt_node(), {}, server);
    for (int w = 0; w < 3; ++w) {
      auto worker = env;
      worker["DMLC_ROLE"] = "worker";
      worker["DMLC_WORKER_ID"] = std::to_string(w);
      worker["DT_TEST_OUT"] = out_prefix();
      spawn(self_path, {"--loss-worker"}, worker);
    }
    return env;
  }
  std::string out_prefix() const { return "/tmp/dt-worker-loss-" + std::to_string(::getpid()); }

  // A worker process in the place of worker 2, joining the running job.
  Child& spawn_joiner(const std::map<std::string, std::string>& env) {
    auto worker = env;
    worker["DMLC_ROLE"] = "worker";
    worker["DMLC_WORKER_ID"] = "2";
    worker["DT_TEST_OUT"] = out_prefix();
    spawn(self_path, {"--loss-worker"}, worker);
    return children_.back();
  }

  // Stops worker 2 (the last child) once it says it is stalling; every other
  // process but the scheduler (children_[0], which ends after them all) must
  // finish without it; woken, it must fail (status 3), and the scheduler end
  // cleanly.
  void expect_the_stalled_worker_dropped() {
    Child& staller = children_.back();
    ASSERT_TRUE(wait_output(staller, "stalling", 60s)) << read_file(staller.err);
    ASSERT_EQ(::kill(staller.pid, SIGSTOP), 0);
    for (size_t i = 1; i + 1 < children_.size(); ++i) {
      ASSERT_TRUE(wait_exit(children_[i], 60s)) << "process " << i << " hung while worker 2 stalled";
      EXPECT_EQ(children_[i].status, 0) << "process " << i << ": " << read_file(children_[i].err);
    }
    ::kill(staller.pid, SIGCONT);
    ASSERT_TRUE(wait_exit(staller, 30s));
    EXPECT_EQ(staller.status, 3) << read_file(staller.err);
    ASSERT_TRUE(wait_exit(children_[0], 30s));
    EXPECT_EQ(children_[0].status, 0) << read_file(children_[0].err);
  }

  // Waits for worker 2 (children_[leaver]) to leave, starts a worker in its
  // place, and waits for every other process to end cleanly. Returns the
  // round the joined worker started at (0 after a failure, reported).
  int round_joined_at(const std::map<std::string, std::string>& env, size_t leaver) {
    if (!wait_exit(children_[leaver], 60s)) {
      ADD_FAILURE() << "worker 2 did not leave";
      return 0;
    }
    EXPECT_EQ(children_[leaver].status, 0) << read_file(children_[leaver].err);
    Child& joiner = spawn_joiner(env);
    if (!wait_output(joiner, "joined before round", 60s)) {
      ADD_FAILURE() << read_file(joiner.err);
      return 0;
    }
    for (size_t i = 0; i < children_.size(); ++i) {
      if (i == leaver) continue;
      if (!wait_exit(children_[i], 60s)) {
        ADD_FAILURE() << "process " << i << " hung after worker 2 joined again";
        return 0;
      }
      EXPECT_EQ(children_[i].status, 0) << "process " << i << ": " << read_file(children_[i].err);
    }
    const std::string said = read_file(joiner.out);
    const size_t at = said.find("joined before round ");
    if (at == std::string::npos) {
      ADD_FAILURE() << said;
      return 0;
    }
    return std::stoi(said.substr(at + 20));
  }

  // The weights of allreduce_worker's job after the joined worker's first
  // round: every weight exact on all three. Worker 2's value counts in its
  // first kLeaverRounds rounds and in those from the joined one's first on,
  // no other.
  void expect_joined_allreduce_job_exact(int first) {
    ASSERT_GT(first, kLeaverRounds);
    ASSERT_LE(first, kJoinRounds) << "the others finished before it joined: slow them down";
    const float expected = kInit - 6.0f * static_cast<float>(kLeaverRounds + kJoinRounds - first + 1) -
                           3.0f * static_cast<float>(first - 1 - kLeaverRounds);
    const size_t count = static_cast<size_t>(kAllreduceSizes[0] + kAllreduceSizes[1] + kAllreduceSizes[2]);
    for (int r = 0; r < 3; ++r) {
      test::expect_weights_file(out_prefix() + "." + std::to_string(r), count, expected, "worker " + std::to_string(r));
    }
    EXPECT_NE(read_file(children_[0].err).find("was let into the running job"), std::string::npos)
        << read_file(children_[0].err);
    EXPECT_NE(read_file(children_[1].err).find("let worker(s) 2 into the job"), std::string::npos)
        << read_file(children_[1].err);
  }

  // Every weight of a survivor's final pull.
  void expect_weights(int rank, float expected) {
    test::expect_weights_file(out_prefix() + "." + std::to_string(rank), static_cast<size_t>(kSizes[0] + kSizes[1]),
                              expected, "worker " + std::to_string(rank));
  }

  static float expected_weight() {
    return kInit - 6.0f * kLeaverRounds - 3.0f * static_cast<float>(kRounds - kLeaverRounds);
  }
};

}  // namespace dt::ps::worker_loss_test
