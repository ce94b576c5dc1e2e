// Issue 19, item 1: DT_SERVER_REPLICATION=1. A dist_sync job of 1 scheduler,
// 2 servers and 2 real worker processes over tcp loopback, where one server
// is lost mid-training (kill -9, or a stall past the heartbeat timeout): the
// workers finish on the replicas, with exact results, and no push is lost or
// counted twice.
//
// Every worker pushes the value (rank + 1) into every element of two keys
// (one of them split across both servers) each round, and the servers run
// sgd with learning rate 1, so after R rounds every weight is init - 3 R
// exactly; a push lost would leave + 1 or + 2 behind, a push counted twice
// take them off again.
//
// Every wait has a deadline; the fixture SIGKILLs whatever still runs.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "kvstore/kvstore_factory.h"
#include "process_harness.h"
#include "ps/job/environment_options.h"
#include "rank_sum_job.h"

namespace dt::ps {
namespace {

using core::Error;
using test::Child;
using test::read_file;
using namespace std::chrono_literals;

std::string self_path;
constexpr int kRounds = 60;  // DT_TEST_ROUNDS sets another count
constexpr int kLossRound = 10;  // worker 0 says so after this round: the test then takes a server
constexpr int kSecondLossRound = 30;  // and again after this one
constexpr float kInit = 1000.0f;
// Key 1 is larger than the big-array bound below: split across both servers.
const std::vector<int64_t> kSizes = {4, 3000};

// A worker: kRounds pushpulls, a little apart so that the loss lands among
// them, then a barrier and a final pull written to DT_TEST_OUT.<rank>.
int rounds_from_environment() {
  const char* text = std::getenv("DT_TEST_ROUNDS");
  return text == nullptr ? kRounds : std::atoi(text);
}

int worker_main() {
  try {
    auto kv = kvstore::create_kvstore("dist_sync", ps_options_from_environment());
    const int rank = kv->rank();
    test::RankSumKeys k = test::init_rank_sum_keys(*kv, kSizes, kInit);
    const int rounds = rounds_from_environment();
    for (int round = 1; round <= rounds; ++round) {
      kv->pushpull(k.keys, k.values, k.outs, 0);
      if (rank == 0 && round == kLossRound) std::cout << "take a server" << std::endl;
      if (rank == 0 && round == kSecondLossRound) std::cout << "take another server" << std::endl;
      std::this_thread::sleep_for(20ms);
    }
    return test::finish_rank_sum_worker(*kv, k);
  } catch (const Error& e) {
    return test::rank_sum_worker_failed(e);
  }
}

class ServerReplication : public test::JobProcesses {
 protected:
  // children_: 0 the scheduler, 1 .. servers the servers, then the 2 workers.
  void job(const std::string& replication, const std::string& heartbeat_timeout_s = "2", int servers = 2,
           int rounds = kRounds) {
    servers_ = servers;
    rounds_ = rounds;
    std::map<std::string, std::string> env = test::fast_job_env(servers, 2, heartbeat_timeout_s);
    env["DT_TEST_ROUNDS"] = std::to_string(rounds);
    env["DT_BIGARRAY_BOUND_BYTES"] = "4096";
    env["DT_SERVER_REPLICATION"] = replication;
    env["PS_VERBOSE"] = "1";  // the scheduler lists the node table: which pid has which rank
    const std::string port = start_tcp_scheduler(env);
    env["DMLC_PS_ROOT_URI"] = "127.0.0.1";
    env["DMLC_PS_ROOT_PORT"] = port;
    auto server = env;
    server["DMLC_ROLE"] = "server";
    server_env_ = server;
    for (int s = 0; s < servers; ++s) spawn(dt_node(), {}, server);
    for (int w = 0; w < 2; ++w) {
      auto worker = env;
      worker["DMLC_ROLE"] = "worker";
      worker["DMLC_WORKER_ID"] = std::to_string(w);
      worker["DT_TEST_OUT"] = out_prefix();
      spawn(self_path, {"--replication-worker"}, worker);
    }
  }
  Child& worker_process(int rank) { return children_[static_cast<size_t>(1 + servers_ + rank)]; }
  // The process the scheduler gave rank (servers register in any order).
  Child& server_process(int rank) {
    const std::string log = read_file(children_[0].err);
    const std::string name = "server " + std::to_string(rank) + " (pid ";
    const size_t at = log.find(name);
    EXPECT_NE(at, std::string::npos) << log;
    const pid_t pid = at == std::string::npos ? -1 : std::stoi(log.substr(at + name.size()));
    for (int s = 1; s <= servers_; ++s) {
      if (children_[static_cast<size_t>(s)].pid == pid) return children_[static_cast<size_t>(s)];
    }
    ADD_FAILURE() << "no server process has the pid of server " << rank;
    return children_[1];
  }
  std::string out_prefix() const { return "/tmp/dt-server-replication-" + std::to_string(::getpid()); }

  // Every weight of a worker's final pull is init - 3 rounds.
  void expect_exact_weights(int rank) {
    test::expect_weights_file(out_prefix() + "." + std::to_string(rank), static_cast<size_t>(kSizes[0] + kSizes[1]),
                              kInit - 3.0f * static_cast<float>(rounds_), "worker " + std::to_string(rank));
  }

  // Until the scheduler's log says text (30 s at most); whether it did.
  bool wait_for_scheduler(const std::string& text) {
    const auto end = std::chrono::steady_clock::now() + 30s;
    while (read_file(children_[0].err).find(text) == std::string::npos && std::chrono::steady_clock::now() < end) {
      std::this_thread::sleep_for(10ms);
    }
    return read_file(children_[0].err).find(text) != std::string::npos;
  }

  // Until the scheduler says it went on with `left` servers.
  void wait_for_departure(int left = 1) {
    const std::string text =
        "the job goes on with " + std::to_string(left) + " of " + std::to_string(servers_) + " servers";
    const auto end = std::chrono::steady_clock::now() + 30s;
    while (read_file(children_[0].err).find(text) == std::string::npos && std::chrono::steady_clock::now() < end) {
      std::this_thread::sleep_for(10ms);
    }
  }

  // Waits for the workers and the scheduler to end cleanly.
  void expect_job_finished() {
    for (Child* c : {&worker_process(0), &worker_process(1), &children_[0]}) {
      ASSERT_TRUE(wait_exit(*c, 60s)) << "pid " << c->pid << " hung after the server loss";
      EXPECT_EQ(c->status, 0) << "pid " << c->pid << ": " << read_file(c->err);
    }
    expect_exact_weights(0);
    expect_exact_weights(1);
  }

  int servers_ = 2;
  int rounds_ = kRounds;
  std::map<std::string, std::string> server_env_;
};

TEST_F(ServerReplication, AKilledServersKeysAreServedByTheirReplicasExactly) {
  job("1");
  ASSERT_TRUE(wait_output(worker_process(0), "take a server", 60s)) << read_file(worker_process(0).err);
  ASSERT_EQ(::kill(children_[1].pid, SIGKILL), 0);
  expect_job_finished();
  ASSERT_TRUE(wait_exit(children_[2], 30s));
  EXPECT_EQ(children_[2].status, 0) << read_file(children_[2].err);
  const std::string scheduler_log = read_file(children_[0].err);
  EXPECT_NE(scheduler_log.find("the job goes on with 1 of 2 servers"), std::string::npos) << scheduler_log;
  EXPECT_NE(read_file(worker_process(0).err).find("pulled from their other holders"), std::string::npos)
      << read_file(worker_process(0).err);
}

// A server that stalls past the heartbeat timeout is dropped like a dead
// one; when it wakes it fails, and what it still answers (kPeerLost) does
// not fail the workers, whose results stay exact.
TEST_F(ServerReplication, AStalledServerIsDroppedAndFailsWhenItWakes) {
  job("1", "1");
  ASSERT_TRUE(wait_output(worker_process(0), "take a server", 60s)) << read_file(worker_process(0).err);
  ASSERT_EQ(::kill(children_[2].pid, SIGSTOP), 0);
  // Woken as soon as the scheduler dropped it, while the job still runs.
  wait_for_departure();
  ::kill(children_[2].pid, SIGCONT);
  expect_job_finished();
  ASSERT_TRUE(wait_exit(children_[2], 30s));
  // It learns that it was dropped, or, when its own heartbeat deadline
  // passes first, takes the scheduler for lost: it ends either way.
  EXPECT_NE(children_[2].status, 0);
  EXPECT_NE(read_file(children_[2].err).find("lost"), std::string::npos) << read_file(children_[2].err);
}

// One replica per part: the second server lost takes the only copy of
// some parts, and ends the job.
TEST_F(ServerReplication, ASecondLostServerEndsTheJob) {
  job("1");
  ASSERT_TRUE(wait_output(worker_process(0), "take a server", 60s)) << read_file(worker_process(0).err);
  ASSERT_EQ(::kill(children_[1].pid, SIGKILL), 0);
  wait_for_departure();
  ASSERT_EQ(::kill(children_[2].pid, SIGKILL), 0);
  for (int w : {0, 1}) {
    ASSERT_TRUE(wait_exit(worker_process(w), 60s)) << "worker " << w << " hung after the second server loss";
    EXPECT_EQ(worker_process(w).status, 3) << read_file(worker_process(w).err);
  }
}

// Every part is on a server and the next: servers 1 and 3 of 4 may both
// go, since each part keeps a copy on 0 or 2.
TEST_F(ServerReplication, ServersNotNextToEachOtherMayBothBeLost) {
  job("1", "2", 4);
  ASSERT_TRUE(wait_output(worker_process(0), "take a server", 60s)) << read_file(worker_process(0).err);
  ASSERT_EQ(::kill(server_process(1).pid, SIGKILL), 0);
  wait_for_departure(3);
  ASSERT_EQ(::kill(server_process(3).pid, SIGKILL), 0);
  wait_for_departure(2);
  expect_job_finished();
}

// New copies: with 3 servers, the parts server 1 held (its own, and its
// copies of server 0's) get new copies on the next servers left (2 and 0),
// filled from their other holders while training goes on. Once the
// scheduler says so, server 2 may go too, though it was next to server 1:
// server 0 holds every part, and the results stay exact.
TEST_F(ServerReplication, ALostServersPartsGetNewCopiesSoThatItsNeighbourMayGoToo) {
  job("1", "2", 3);
  ASSERT_TRUE(wait_output(worker_process(0), "take a server", 60s)) << read_file(worker_process(0).err);
  ASSERT_EQ(::kill(server_process(1).pid, SIGKILL), 0);
  wait_for_departure(2);
  ASSERT_TRUE(wait_for_scheduler("have two holders again after the loss of 1 server(s)")) << read_file(children_[0].err);
  ASSERT_TRUE(wait_output(worker_process(0), "take another server", 60s)) << read_file(worker_process(0).err);
  ASSERT_EQ(::kill(server_process(2).pid, SIGKILL), 0);
  wait_for_departure(1);
  Child& last = server_process(0);
  expect_job_finished();
  const std::string scheduler_log = read_file(children_[0].err);
  EXPECT_NE(scheduler_log.find("the job goes on with 1 of 3 servers"), std::string::npos) << scheduler_log;
  // Server 0 filled its new copies of server 1's parts from server 2
  // (PS_VERBOSE=1 says so), before it became their only holder.
  const std::string server_log = read_file(last.err);
  EXPECT_NE(server_log.find("filled from server 2"), std::string::npos) << server_log;
  EXPECT_EQ(server_log.find("could not fill"), std::string::npos) << server_log;
}

// Server rejoin (issue 19, item 3): of 2 servers, server 1 is killed and a
// server process started again takes its place. It fetches the job's
// settings from server 0, the scheduler announces it, and the workers give
// it new copies of every part, filled from server 0 while training goes on.
// Once they are filled server 0 may go too: the rejoined server holds
// every part, and the results stay exact.
TEST_F(ServerReplication, AServerStartedAgainRejoinsAsAReplicaSoThatTheOtherMayGo) {
  job("1", "2", 2, 400);
  ASSERT_TRUE(wait_output(worker_process(0), "take a server", 60s)) << read_file(worker_process(0).err);
  const pid_t original_1 = server_process(1).pid;
  ASSERT_EQ(::kill(original_1, SIGKILL), 0);
  wait_for_departure(1);
  Child& again = spawn(dt_node(), {}, server_env_);
  ASSERT_TRUE(wait_for_scheduler("rejoined the running job; the job has 2 of 2 servers again"))
      << read_file(children_[0].err) << read_file(again.err);
  ASSERT_TRUE(wait_for_scheduler("have two holders again after 1 server loss(es) and 1 rejoin(s)"))
      << read_file(children_[0].err) << read_file(again.err);
  ASSERT_EQ(::kill(server_process(0).pid, SIGKILL), 0);
  expect_job_finished();
  const std::string scheduler_log = read_file(children_[0].err);
  EXPECT_NE(scheduler_log.find("registered to rejoin the running job in the place of server 1 (pid " +
                               std::to_string(original_1)),
            std::string::npos)
      << scheduler_log;
  // The rejoined server took the settings, then filled its copies from
  // server 0 (PS_VERBOSE=1 says so) before it became their only holder.
  ASSERT_TRUE(wait_exit(again, 30s));
  EXPECT_EQ(again.status, 0) << read_file(again.err);
  const std::string server_log = read_file(again.err);
  EXPECT_NE(server_log.find("disttrain server 1: rejoined the running job"), std::string::npos) << server_log;
  EXPECT_NE(server_log.find("filled from server 0"), std::string::npos) << server_log;
  EXPECT_EQ(server_log.find("could not fill"), std::string::npos) << server_log;
}

// A server registering while no server is lost waits for a place, and is
// refused once none frees up in time (DT_STARTUP_TIMEOUT_S): the job is not
// disturbed.
TEST_F(ServerReplication, AServerRegisteringWhileNoneIsLostWaitsAndIsRefused) {
  job("1", "2", 2, 400);
  ASSERT_TRUE(wait_output(worker_process(0), "take a server", 60s)) << read_file(worker_process(0).err);
  auto extra_env = server_env_;
  extra_env["DT_STARTUP_TIMEOUT_S"] = "30";
  Child& extra = spawn(dt_node(), {}, extra_env);
  expect_job_finished();
  ASSERT_TRUE(wait_exit(extra, 30s));
  EXPECT_NE(extra.status, 0);
  // Told so, or (the reply still queued as the scheduler exits) it finds
  // the scheduler gone; never a place in the job.
  const std::string said = read_file(extra.err);
  EXPECT_TRUE(said.find("a server registered to rejoin a job that is ending") != std::string::npos ||
              said.find("scheduler") != std::string::npos)
      << said;
  EXPECT_EQ(read_file(children_[0].err).find("registered to rejoin the running job"), std::string::npos)
      << read_file(children_[0].err);
}

// Two servers next to each other lost at once: the parts they both held
// had no new copy yet, and the job ends.
TEST_F(ServerReplication, NeighboursLostBeforeTheNewCopiesAreFilledEndTheJob) {
  job("1", "2", 3);
  ASSERT_TRUE(wait_output(worker_process(0), "take a server", 60s)) << read_file(worker_process(0).err);
  const pid_t first = server_process(1).pid;
  const pid_t second = server_process(2).pid;
  ASSERT_EQ(::kill(first, SIGKILL), 0);
  ASSERT_EQ(::kill(second, SIGKILL), 0);
  for (int w : {0, 1}) {
    ASSERT_TRUE(wait_exit(worker_process(w), 60s)) << "worker " << w << " hung after the server losses";
    EXPECT_EQ(worker_process(w).status, 3) << read_file(worker_process(w).err);
  }
}

// Without replication a lost server still ends the job, naming it (MXNet's
// behaviour, the default).
TEST_F(ServerReplication, WithoutItALostServerEndsTheJob) {
  job("0");
  ASSERT_TRUE(wait_output(worker_process(0), "take a server", 60s)) << read_file(worker_process(0).err);
  ASSERT_EQ(::kill(children_[1].pid, SIGKILL), 0);
  for (int w : {0, 1}) {
    ASSERT_TRUE(wait_exit(worker_process(w), 60s)) << "worker " << w << " hung after the server loss";
    EXPECT_EQ(worker_process(w).status, 3) << read_file(worker_process(w).err);
  }
}

}  // namespace
}  // namespace dt::ps

int main(int argc, char** argv) {
  dt::ps::self_path = dt::test::self_executable();
  return dt::test::member_or_tests(argc, argv, "--replication-worker", dt::ps::worker_main);
}
