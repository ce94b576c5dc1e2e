// The data plane across processes: a scheduler and servers (dt-node) and
// workers (this program re-executed with --dist-worker) over tcp and ipc
// loopback. Workers train LeNet on half of a fixed batch through a dist_sync
// kvstore and write their weights; the test compares them bit for bit with a
// single-process two-replica run through the local kvstore, and across runs.
// Killing a worker or a server must make every other process exit naming it.
// Every wait has a deadline; the fixture SIGKILLs whatever still runs.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/context.h"
#include "core/error.h"
#include "kvstore/kvstore_factory.h"
#include "lenet_exactness.h"
#include "nn/model_builders.h"
#include "nn/net.h"
#include "process_harness.h"
#include "ps/job/job_config.h"
#include "train/trainer.h"

extern char** environ;

namespace dt::ps {
namespace {

using core::DType;
using core::Error;
using core::ErrorCode;
using core::NDArray;
using core::Shape;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;
using test::Child;
using test::read_file;
using test::batch;
using test::lenet;
using test::sgd;
using test::single_thread_cpu;

std::string self_path;
constexpr int kSteps = 4;

std::string weights_bytes(const nn::Net& net) {
  std::string out;
  for (const nn::Parameter& p : net.parameters()) {
    if (p.auxiliary) continue;
    out.append(static_cast<const char*>(p.value.data()), p.value.nbytes());
  }
  return out;
}

PsOptions options_from_env() {
  PsOptions o;
  const auto read = [](const char* name, double& into) {
    if (const char* v = std::getenv(name)) into = std::atof(v);
  };
  read("DT_STARTUP_TIMEOUT_S", o.startup_timeout_s);
  read("DT_REQUEST_TIMEOUT_S", o.request_timeout_s);
  read("DT_HEARTBEAT_INTERVAL_S", o.heartbeat_interval_s);
  read("DT_HEARTBEAT_TIMEOUT_S", o.heartbeat_timeout_s);
  read("DT_SHUTDOWN_TIMEOUT_S", o.shutdown_timeout_s);
  if (const char* v = std::getenv("DT_BIGARRAY_BOUND_BYTES")) o.bigarray_bound_bytes = std::strtoull(v, nullptr, 10);
  return o;
}

// What a re-executed worker does: train, or (DT_TEST_ACTION=hold) pushpull
// until something fails.
int worker_main() {
  try {
    auto kv = std::shared_ptr<kvstore::KVStore>(kvstore::create_kvstore("dist_sync", options_from_env()));
    const int rank = kv->rank();
    std::cout << "rank " << rank << std::endl;
    auto net = lenet();
    train::Trainer trainer(net, sgd(0.025), kv);
    const auto [images, labels] = batch(rank * 8, rank * 8 + 8);
    const char* action = std::getenv("DT_TEST_ACTION");
    const bool hold = action != nullptr && std::string(action) == "hold";
    for (int step = 0; hold || step < kSteps; ++step) {
      trainer.train_batch(images, labels);
      if (step == 0) std::cout << "trained" << std::endl;
    }
    std::ofstream(std::getenv("DT_TEST_OUT") + std::string(".") + std::to_string(rank), std::ios::binary)
        << weights_bytes(*net);
    return 0;
  } catch (const Error& e) {
    std::cerr << "worker failed: " << e.what() << std::endl;
    return e.code() == ErrorCode::kPeerLost ? 3 : 5;
  }
}

class DistProcesses : public test::JobProcesses {};

std::map<std::string, std::string> fast_job(int servers, int workers) {
  return test::fast_job_env(servers, workers, "3");
}

std::string reference_weights() {
  auto net = lenet();
  train::TrainerOptions options;
  options.extra_contexts = {single_thread_cpu()};
  train::Trainer trainer(net, sgd(0.05), kvstore::create_kvstore("local"), options);
  const auto [images, labels] = batch(0, 16);
  for (int step = 0; step < kSteps; ++step) trainer.train_batch(images, labels);
  return weights_bytes(*net);
}

class DistJob : public DistProcesses {
 protected:
  // 1 scheduler + 2 servers + 2 workers; returns the workers' env.
  std::map<std::string, std::string> start(const std::string& transport, const std::string& action) {
    auto env = fast_job(2, 2);
    env["DT_BIGARRAY_BOUND_BYTES"] = "4096";
    const std::string port = start_tcp_scheduler(env);
    env["DMLC_PS_ROOT_URI"] = "127.0.0.1";
    env["DMLC_PS_ROOT_PORT"] = port;
    env["DT_PS_DATA_TRANSPORT"] = transport;
    env["DT_TEST_ACTION"] = action;
    auto server = env;
    server["DMLC_ROLE"] = "server";
    spawn(dt_node(), {}, server);
    spawn(dt_node(), {}, server);
    for (int w = 0; w < 2; ++w) {
      auto worker = env;
      worker["DMLC_ROLE"] = "worker";
      worker["DMLC_WORKER_ID"] = std::to_string(w);
      worker["DT_TEST_OUT"] = out_prefix();
      spawn(self_path, {"--dist-worker"}, worker);
    }
    return env;
  }
  std::string out_prefix() const { return "/tmp/dt-dist-it-" + std::to_string(::getpid()) + "-" + std::to_string(run_); }

  // Runs a training job to its end; returns worker 0's weights.
  std::string train(const std::string& transport) {
    ++run_;
    children_.clear();
    start(transport, "train");
    for (Child& c : children_) {
      EXPECT_TRUE(wait_exit(c, 60s)) << "a process hung";
      EXPECT_EQ(c.status, 0) << read_file(c.err);
    }
    const std::string w0 = read_file(out_prefix() + ".0"), w1 = read_file(out_prefix() + ".1");
    std::remove((out_prefix() + ".0").c_str());
    std::remove((out_prefix() + ".1").c_str());
    EXPECT_EQ(w0, w1) << "the workers' weights differ";
    return w0;
  }

  void kill_and_expect_peer_lost(size_t victim_index, const std::string& role) {
    ++run_;
    start("auto", "hold");
    for (size_t i = 3; i < 5; ++i) ASSERT_TRUE(wait_output(children_[i], "trained", 30s)) << read_file(children_[i].err);
    Child& victim = children_[victim_index];
    const auto killed_at = Clock::now();
    ::kill(victim.pid, SIGKILL);
    ASSERT_TRUE(wait_exit(victim, 5s));
    const std::string name = " (pid " + std::to_string(victim.pid) + " ";
    for (size_t i = 0; i < children_.size(); ++i) {
      if (i == victim_index) continue;
      ASSERT_TRUE(wait_exit(children_[i], 10s)) << "process " << i << " hung after the kill";
      EXPECT_NE(children_[i].status, 0);
      const std::string err = read_file(children_[i].err);
      EXPECT_NE(err.find(role + " "), std::string::npos) << i << ": " << err;
      EXPECT_NE(err.find(name), std::string::npos) << i << ": " << err;
    }
    // Heartbeat timeout 3 s: everyone must be gone within 2x that.
    EXPECT_LT(Clock::now() - killed_at, 6s) << "loss detected too late";
  }

  int run_ = 0;
};

TEST_F(DistJob, SyncTrainingOverTcpAndIpcIsBitIdenticalToLocalAndRepeatable) {
  const std::string expected = reference_weights();
  const std::string tcp1 = train("tcp");
  const std::string tcp2 = train("tcp");
  const std::string ipc = train("ipc");
  ASSERT_EQ(tcp1.size(), expected.size());
  EXPECT_TRUE(tcp1 == expected) << "dist_sync over tcp differs from the local kvstore";
  EXPECT_TRUE(tcp1 == tcp2) << "two dist_sync runs differ";
  EXPECT_TRUE(ipc == expected) << "dist_sync over ipc differs from the local kvstore";
}

TEST_F(DistJob, KilledWorkerIsNamedByEveryOtherProcess) { kill_and_expect_peer_lost(4, "worker 1"); }

// Which rank the killed server holds depends on registration order: the
// check names it by pid.
TEST_F(DistJob, KilledServerIsNamedByEveryOtherProcess) { kill_and_expect_peer_lost(2, "server"); }

}  // namespace
}  // namespace dt::ps

int main(int argc, char** argv) {
  dt::ps::self_path = dt::test::self_executable();
  return dt::test::member_or_tests(argc, argv, "--dist-worker", dt::ps::worker_main);
}
