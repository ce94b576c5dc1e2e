// Hostile and broken peers against a live dist_sync job (issue 23): a
// scheduler, one server and two LeNet workers on threads over tcp loopback,
// and an attacker with its own small client that speaks the protocol. The
// workers train two steps, the attacker sends its messages, the workers
// train two more: every case must end with the attacker holding only error
// replies, every node ending cleanly, and the workers' weights bit-identical
// to an undisturbed run (a local kvstore, which dist_sync equals bit for bit).
#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <future>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "kvstore/dist_kvstore.h"
#include "kvstore/kvstore_factory.h"
#include "lenet_exactness.h"
#include "ps/scheduler/scheduler.h"
#include "ps/server/server_process.h"
#include "ps/transport/data_codec.h"
#include "ps/transport/frame.h"
#include "ps/transport/request_client.h"
#include "train/trainer.h"

namespace dt {
namespace {

using namespace std::chrono_literals;
using core::DType;
using core::Error;
using core::ErrorCode;
using core::Shape;
using ps::DataTransport;
using ps::EncodedData;
using ps::Frame;
using ps::JobConfig;
using ps::Message;
using ps::PartInfo;
using ps::PartKey;
using ps::PsOptions;
using ps::RequestClient;
using ps::Role;
using ps::SliceSpec;
namespace wire = ps::wire;

constexpr int kSteps = 4;  // two before the attack, two after

PsOptions options() {
  PsOptions o;
  o.startup_timeout_s = 20;
  o.request_timeout_s = 20;
  o.heartbeat_interval_s = 0.1;
  o.heartbeat_timeout_s = 2;
  o.shutdown_timeout_s = 5;
  return o;
}

JobConfig job_config(Role role, const std::string& url, int worker_id = -1,
                     const net::TransportSecurity& security = {}) {
  JobConfig job;
  job.security = security;
  job.role = role;
  job.root_url = url;
  job.scheduler_listen_url = url;
  job.num_servers = 1;
  job.num_workers = 2;
  job.worker_id = worker_id;
  job.node_host = "127.0.0.1";
  return job;
}

// The undisturbed result: two replicas on a local kvstore, 16 images.
const std::vector<float>& reference_weights() {
  static const std::vector<float> expected = [] {
    auto net = test::lenet();
    train::TrainerOptions topts;
    topts.extra_contexts = {test::single_thread_cpu()};
    train::Trainer trainer(net, test::sgd(0.05), kvstore::create_kvstore("local"), topts);
    const auto [images, labels] = test::batch(0, 16);
    for (int step = 0; step < kSteps; ++step) trainer.train_batch(images, labels);
    return test::weights(*net);
  }();
  return expected;
}

// What the attacker sees of the job, and its own connections.
struct Target {
  std::string scheduler_url;
  std::string server_url;  // the server's tcp URL
};

// The attacker's request, answered: the error it carried (none: OK).
std::optional<Error> ask(RequestClient& client, Message request) {
  try {
    const Frame reply = Frame::parse(client.call(std::move(request), 10s));
    if (const auto* data = reply.body<wire::DataReply>()) {
      if (data->status() == 0) return std::nullopt;
      return Error(static_cast<ErrorCode>(data->status()), data->message() ? data->message()->str() : "");
    }
    if (reply.body<wire::ErrorReply>() != nullptr) reply.expect<wire::Ack>();  // throws its error
    return std::nullopt;
  } catch (const Error& e) {
    return e;
  }
}

Message heartbeat(Role role, int rank) {
  flatbuffers::FlatBufferBuilder fbb(64);
  return ps::make_message(fbb, wire::CreateHeartbeat(fbb, static_cast<wire::Role>(role), rank));
}

Message shutdown(Role role, int rank) {
  flatbuffers::FlatBufferBuilder fbb(64);
  return ps::make_message(fbb, wire::CreateShutdown(fbb, static_cast<wire::Role>(role), rank));
}

Message barrier(int rank, uint64_t id) {
  flatbuffers::FlatBufferBuilder fbb(64);
  return ps::make_message(fbb, wire::CreateBarrier(fbb, rank, id));
}

// LeNet's first key as the job stores it: key 0, a (6, 1, 5, 5) weight.
const PartInfo kKey0{PartKey{0, 0, 150}, DType::kFloat32, Shape({6, 1, 5, 5})};

Message pull(int worker, const PartInfo& info, int64_t round) {
  return ps::encode_data_request(wire::DataOp::Pull, worker, {SliceSpec{info, round, 0}}).message;
}

// Sends every message on one fresh connection; each must be refused.
// Sends every message on one fresh connection; each must be refused (with
// `code`, when given).
void expect_all_refused(const std::string& url, std::vector<Message> messages, const std::string& what,
                        const net::TransportSecurity& security = {}, std::optional<ErrorCode> code = std::nullopt) {
  RequestClient client(url, 10s, ps::kDefaultMaxMessageBytes, security);
  for (size_t i = 0; i < messages.size(); ++i) {
    const std::optional<Error> error = ask(client, std::move(messages[i]));
    EXPECT_TRUE(error.has_value()) << what << " #" << i << " was accepted";
    if (error && code) EXPECT_EQ(error->code(), *code) << what << " #" << i << ": " << error->what();
  }
}

using Attack = std::function<void(const Target&)>;

// Runs the job with `attack` between steps 2 and 3 and checks the outcome.
// security: the job's (every real node's).
void run_attacked_job(const Attack& attack, const net::TransportSecurity& security = {}) {
  const std::vector<float>& expected = reference_weights();
  const PsOptions o = options();
  ps::Scheduler scheduler(job_config(Role::kScheduler, "tcp://127.0.0.1:0", -1, security), o);
  const std::string url = scheduler.url();
  auto scheduler_done = std::async(std::launch::async, [&] { scheduler.run(); });
  auto server_done =
      std::async(std::launch::async, [&] { ps::run_server(job_config(Role::kServer, url, -1, security), o); });

  std::promise<Target> target_promise;
  std::promise<void> attacked;
  std::shared_future<void> resume = attacked.get_future().share();
  std::atomic<int> paused{0};
  std::promise<void> both_paused;
  auto run_worker = [&](int rank) {
    auto kv = std::make_shared<kvstore::DistKVStore>("dist_sync", job_config(Role::kWorker, url, rank, security), o,
                                                     DataTransport::kTcp);
    if (rank == 0) {
      target_promise.set_value(Target{url, kv->node_table().servers.at(0).data_urls.at(0)});
    }
    auto net = test::lenet();
    train::Trainer trainer(net, test::sgd(0.025), kv);
    const auto [images, labels] = test::batch(rank * 8, rank * 8 + 8);
    for (int step = 0; step < kSteps; ++step) {
      if (step == kSteps / 2) {
        if (++paused == 2) both_paused.set_value();
        if (resume.wait_for(60s) != std::future_status::ready) throw Error(ErrorCode::kTimedOut, "no resume");
      }
      trainer.train_batch(images, labels);
    }
    return test::weights(*net);
  };
  auto w0 = std::async(std::launch::async, run_worker, 0);
  auto w1 = std::async(std::launch::async, run_worker, 1);

  auto target_future = target_promise.get_future();
  auto paused_future = both_paused.get_future();
  if (target_future.wait_for(60s) == std::future_status::ready &&
      paused_future.wait_for(60s) == std::future_status::ready) {
    attack(target_future.get());
  } else {
    ADD_FAILURE() << "the job did not reach its second step";
  }
  attacked.set_value();

  for (auto* f : {&w0, &w1}) ASSERT_EQ(f->wait_for(90s), std::future_status::ready) << "a worker hung";
  std::vector<float> a, b;
  try {
    a = w0.get();
    b = w1.get();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "a worker failed: " << e.what();
  }
  for (auto* f : {&scheduler_done, &server_done}) {
    ASSERT_EQ(f->wait_for(30s), std::future_status::ready) << "the scheduler or the server hung";
    try {
      f->get();
    } catch (const std::exception& e) {
      ADD_FAILURE() << "the scheduler or the server failed: " << e.what();
    }
  }
  ASSERT_EQ(a.size(), expected.size());
  EXPECT_EQ(0, std::memcmp(a.data(), expected.data(), a.size() * sizeof(float))) << "worker 0's weights changed";
  EXPECT_EQ(0, std::memcmp(b.data(), expected.data(), b.size() * sizeof(float))) << "worker 1's weights changed";
}

// The ipc socket files ("/tmp/dt-ps-<pid>-...") of this process.
std::vector<std::string> ipc_files_of(long pid) {
  std::vector<std::string> out;
  const std::string prefix = "dt-ps-" + std::to_string(pid) + "-";
  if (DIR* dir = ::opendir("/tmp")) {
    while (const dirent* entry = ::readdir(dir)) {
      if (std::string(entry->d_name).rfind(prefix, 0) == 0) out.push_back(entry->d_name);
    }
    ::closedir(dir);
  }
  return out;
}

TEST(HostilePeer, UndisturbedJobMatchesTheReferenceAndLeavesNoSocketFiles) {
  // A socket file of a server that was killed: a process that has exited.
  const pid_t dead = ::fork();
  if (dead == 0) ::_exit(0);
  ASSERT_GT(dead, 0);
  ::waitpid(dead, nullptr, 0);
  const std::string stale = "/tmp/dt-ps-" + std::to_string(dead) + "-1-2.ipc";
  { std::ofstream(stale) << "stale"; }
  run_attacked_job([](const Target&) {});
  EXPECT_TRUE(ipc_files_of(dead).empty()) << "the dead server's socket file was not removed";
  EXPECT_TRUE(ipc_files_of(::getpid()).empty()) << "the server left its socket file behind";
  std::remove(stale.c_str());
}

TEST(HostilePeer, HeartbeatInAWorkersNameThenDisconnectIsRefused) {
  run_attacked_job([](const Target& t) {
    std::vector<Message> m;
    m.push_back(heartbeat(Role::kWorker, 1));
    m.push_back(heartbeat(Role::kWorker, 0));
    m.push_back(heartbeat(Role::kServer, 0));
    expect_all_refused(t.scheduler_url, std::move(m), "a heartbeat in another node's name");
    // The client is gone now: its closed connection must not cost worker 1.
    std::this_thread::sleep_for(300ms);
  });
}

TEST(HostilePeer, ShutdownInTheWorkersNamesIsRefused) {
  run_attacked_job([](const Target& t) {
    std::vector<Message> m;
    m.push_back(shutdown(Role::kWorker, 0));
    m.push_back(shutdown(Role::kWorker, 1));
    m.push_back(shutdown(Role::kServer, 0));
    m.push_back(shutdown(Role::kScheduler, 0));
    expect_all_refused(t.scheduler_url, std::move(m), "a shutdown");
  });
}

TEST(HostilePeer, BarriersWithUnusedIdsAreRefusedAndHoldNothing) {
  run_attacked_job([](const Target& t) {
    std::vector<Message> m;
    for (int i = 0; i < 40; ++i) m.push_back(barrier(i % 2, 1000 + static_cast<uint64_t>(i)));
    expect_all_refused(t.scheduler_url, std::move(m), "a barrier");
    // Held or not, many at once from one connection: the heartbeats of the
    // real nodes must still get through for longer than their timeout.
    RequestClient client(t.scheduler_url, 10s);
    std::atomic<int> answered{0};
    for (int i = 0; i < 40; ++i) {
      client.request(barrier(0, 5000 + static_cast<uint64_t>(i)), 10s,
                     [&](std::optional<Error>, Message) { ++answered; });
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(options().heartbeat_timeout_s * 1.5));
    for (int i = 0; i < 500 && answered.load() < 40; ++i) std::this_thread::sleep_for(10ms);
    EXPECT_EQ(answered.load(), 40) << "requests of one connection were held without an answer";
  });
}

TEST(HostilePeer, DataRequestsInTheWorkersNamesAreRefused) {
  run_attacked_job([](const Target& t) {
    std::vector<Message> m;
    // Pulls for round 10^9, from both workers' ranks, more than any slot count.
    for (int i = 0; i < 18; ++i) m.push_back(pull(i % 2, kKey0, 1000000000));
    // The optimizer poisoned: learning rate 1000, rescale, a new optimizer.
    m.push_back(ps::encode_data_request(wire::DataOp::SetLearningRate, 0, {}, "", 1000).message);
    m.push_back(ps::encode_data_request(wire::DataOp::SetLearningRate, 1, {}, "", 0).message);
    m.push_back(ps::encode_data_request(wire::DataOp::SetRescaleGrad, 0, {}, "", 1e9).message);
    m.push_back(ps::encode_data_request(wire::DataOp::SetOptimizer, 0, {},
                                        test::sgd(1000).to_json(), 0).message);
    // A wrong shape, and shapes claiming 2^60 elements.
    m.push_back(pull(0, PartInfo{PartKey{0, 0, 150}, DType::kFloat32, Shape({150, 2})}, 0));
    const Shape huge({int64_t{1} << 30, int64_t{1} << 30});
    m.push_back(pull(1, PartInfo{PartKey{0, 0, int64_t{1} << 60}, DType::kFloat32, huge}, 0));
    {
      // An OptimizerState whose one array claims 2^60 elements with 4 bytes.
      flatbuffers::FlatBufferBuilder fbb;
      const std::vector<SliceSpec> specs{SliceSpec{PartInfo{PartKey{0, 0, 1}, DType::kFloat32, huge}, -1, 4}};
      const ps::SliceTables tables = ps::write_slices(fbb, specs);
      auto arrays = fbb.CreateVector(tables.tables);
      auto names = fbb.CreateVectorOfStrings({"0/0/150.mom"});
      uint8_t* payload = nullptr;
      m.push_back(ps::make_message(fbb, wire::CreateOptimizerState(fbb, 0, names, arrays), tables.payload_bytes,
                                   &payload));
      std::memset(payload, 0, tables.payload_bytes);
    }
    // Inits of new keys of 1M floats (the memory a forged init would take).
    for (uint64_t key = 100; key < 104; ++key) {
      const PartInfo big{PartKey{key, 0, 1 << 20}, DType::kFloat32, Shape({1 << 20})};
      m.push_back(ps::encode_data_request(wire::DataOp::Init, 0, {SliceSpec{big, -1, 4u << 20}}, "dist_sync")
                      .message);
    }
    // A worker rank the job does not have.
    m.push_back(pull(2, kKey0, 0));
    expect_all_refused(t.server_url, std::move(m), "a data request");
  });
}

TEST(HostilePeer, BitFlippedMessagesAreRefused) {
  run_attacked_job([](const Target& t) {
    // Every bit of a valid Pull and of a valid Heartbeat, one at a time:
    // whatever a flip turns them into, from this connection it is refused.
    const Message valid_pull = pull(0, kKey0, 0);
    const Message valid_heartbeat = heartbeat(Role::kWorker, 1);
    const auto flips = [](const Message& m) {
      std::vector<Message> out;
      for (size_t bit = 0; bit < m.size() * 8; ++bit) {
        Message copy = m.copy();
        copy.mutable_data()[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
        out.push_back(std::move(copy));
      }
      return out;
    };
    expect_all_refused(t.server_url, flips(valid_pull), "a bit-flipped pull");
    expect_all_refused(t.scheduler_url, flips(valid_heartbeat), "a bit-flipped heartbeat");
  });
}

net::TransportSecurity secret_filled_with(uint8_t v) {
  net::TransportSecurity s;
  s.secret = net::JobSecret{};
  s.secret->fill(v);
  return s;
}

// Issue 18: in a job with a secret, a node without it or with a wrong one
// cannot register, take a rank, push, pull, start a barrier or stop the job,
// and the real nodes train to the undisturbed result.
TEST(HostilePeer, NodesWithoutTheJobsSecretAreRefusedEverything) {
  const net::TransportSecurity job_secret = secret_filled_with(5);
  run_attacked_job(
      [](const Target& t) {
        const auto everything = [] {
          std::vector<Message> m;
          {
            flatbuffers::FlatBufferBuilder fbb;
            auto host = fbb.CreateString("127.0.0.1");
            auto urls = fbb.CreateVectorOfStrings({"tcp://127.0.0.1:1"});
            m.push_back(ps::make_message(fbb, wire::CreateRegister(fbb, wire::Role::Worker, host, 4242, urls, -1, 1, 2)));
          }
          m.push_back(heartbeat(Role::kWorker, 0));
          m.push_back(barrier(0, 2));
          m.push_back(shutdown(Role::kWorker, 1));
          return m;
        };
        const auto data = [] {
          std::vector<Message> m;
          m.push_back(pull(0, kKey0, 2));
          m.push_back(ps::encode_data_request(wire::DataOp::SetLearningRate, 0, {}, "", 1000).message);
          return m;
        };
        for (const net::TransportSecurity& stranger : {net::TransportSecurity{}, secret_filled_with(6)}) {
          expect_all_refused(t.scheduler_url, everything(), "a control message without the secret", stranger,
                             ErrorCode::kUnauthenticated);
          expect_all_refused(t.server_url, data(), "a data request without the secret", stranger,
                             ErrorCode::kUnauthenticated);
        }
      },
      job_secret);
}

}  // namespace
}  // namespace dt

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
