// The data plane for real: scheduler, servers and workers as threads over
// inproc (this file) exchanging tensors through dist_sync / dist_async
// kvstores, with exactness against the local kvstore, failure propagation
// and malformed input. Every wait has a deadline.
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "lenet_exactness.h"
#include "core/context.h"
#include "core/error.h"
#include "kvstore/dist_kvstore.h"
#include "kvstore/local_kvstore.h"
#include "nn/model_builders.h"
#include "nn/net.h"
#include "ps/data_codec.h"
#include "ps/parameter_server.h"
#include "ps/request_server.h"
#include "ps/request_client.h"
#include "ps/scheduler.h"
#include "ps/server_node.h"
#include "train/trainer.h"

namespace dt::ps {
namespace {

using core::DType;
using core::Error;
using core::ErrorCode;
using core::NDArray;
using core::Shape;
using namespace std::chrono_literals;
using test::batch;
using test::lenet;
using test::sgd;
using test::single_thread_cpu;

JobConfig inproc_job(const std::string& url, Role role, int servers, int workers, int worker_id = -1) {
  JobConfig job;
  job.role = role;
  job.root_url = job.scheduler_listen_url = url;
  job.num_servers = servers;
  job.num_workers = workers;
  job.worker_id = worker_id;
  job.node_host = "127.0.0.1";
  return job;
}

PsOptions fast_options() {
  PsOptions o;
  o.startup_timeout_s = 10;
  o.request_timeout_s = 10;
  o.heartbeat_interval_s = 0.1;
  o.heartbeat_timeout_s = 1;
  o.shutdown_timeout_s = 5;
  o.bigarray_bound_bytes = 4096;  // LeNet's larger weights are split across both servers
  return o;
}

std::string inproc_url(const std::string& name) {
  return "inproc://dist-it-" + std::to_string(::getpid()) + "-" + name;
}

// A scheduler and servers on threads; the destructor waits for them (bounded).
class InprocJob {
 public:
  InprocJob(const std::string& name, int servers, int workers, PsOptions options = fast_options())
      : url_(inproc_url(name)), servers_(servers), workers_(workers), options_(options),
        scheduler_(inproc_job(url_, Role::kScheduler, servers, workers), options) {
    done_.push_back(std::async(std::launch::async, [this] { scheduler_.run(); }));
    for (int s = 0; s < servers; ++s) {
      done_.push_back(std::async(std::launch::async, [this] {
        run_server(inproc_job(url_, Role::kServer, servers_, workers_), options_);
      }));
    }
  }
  ~InprocJob() {
    for (auto& f : done_) f.wait_for(20s);
  }
  std::unique_ptr<kvstore::DistKVStore> worker(const std::string& type, int rank) const {
    return std::make_unique<kvstore::DistKVStore>(type, inproc_job(url_, Role::kWorker, servers_, workers_, rank),
                                                  options_);
  }
  // Every node's outcome: "" for a clean end, else the error text.
  std::vector<std::string> outcomes() {
    std::vector<std::string> out;
    for (auto& f : done_) {
      if (f.wait_for(20s) != std::future_status::ready) {
        out.push_back("hung");
        continue;
      }
      try {
        f.get();
        out.push_back("");
      } catch (const std::exception& e) {
        out.push_back(e.what());
      }
    }
    done_.clear();
    return out;
  }

 private:
  std::string url_;
  int servers_, workers_;
  PsOptions options_;
  Scheduler scheduler_;
  std::vector<std::future<void>> done_;
};

NDArray array(const std::vector<float>& v, Shape shape) {
  NDArray a = NDArray::empty(core::make_cpu_context(), DType::kFloat32, shape);
  a.copy_from_host(v.data(), v.size() * sizeof(float));
  return a;
}
NDArray array(const std::vector<float>& v) { return array(v, Shape({static_cast<int64_t>(v.size())})); }
std::vector<float> values(const NDArray& a) {
  std::vector<float> out(a.size());
  a.copy_to_host(out.data(), out.size() * sizeof(float));
  return out;
}

TEST(PsDataInproc, SyncPushPullSumsWorkersAndSplitsBigKeys) {
  InprocJob job("basic", 2, 2);
  const int64_t big = 5000;  // 20000 bytes > bound: split across both servers
  auto run = [&](int rank) {
    auto kv = job.worker("dist_sync", rank);
    EXPECT_EQ(kv->rank(), rank);
    EXPECT_EQ(kv->num_workers(), 2);
    std::vector<float> init_big(big);
    for (int64_t i = 0; i < big; ++i) init_big[i] = float(i) * (rank == 0 ? 1.0f : -7.0f);
    kv->init({1, 2, 3}, {array({1, 2, 3}), array({float(rank)}), array(init_big)});
    NDArray out_big = array(std::vector<float>(big, 0));
    NDArray out1 = array({0, 0, 0});
    kv->pull({1, 3}, {out1, out_big}, 0);
    EXPECT_EQ(values(out1), (std::vector<float>{1, 2, 3}));
    EXPECT_EQ(values(out_big)[4999], 4999.0f) << "rank 0's init wins";
    for (int step = 1; step <= 3; ++step) {
      std::vector<float> g(big, float(rank + 1) * step);
      NDArray a = array({float(rank), 1, 2}), b = array({10, 10, 10});
      // Two values under key 1 are summed locally first (the multi-device case).
      kv->pushpull({1, 1, 3}, {a, b, array(g)}, {out1, out1, out_big}, 0);
      // (0 + 10) + (1 + 10), (1 + 10) * 2, (2 + 10) * 2: summed over values, then workers.
      EXPECT_EQ(values(out1), (std::vector<float>{21, 22, 24})) << "step " << step;
      for (float v : values(out_big)) ASSERT_EQ(v, 3.0f * step);
    }
    kv->barrier();
  };
  auto w0 = std::async(std::launch::async, run, 0);
  auto w1 = std::async(std::launch::async, run, 1);
  ASSERT_EQ(w0.wait_for(30s), std::future_status::ready);
  ASSERT_EQ(w1.wait_for(30s), std::future_status::ready);
  w0.get();
  w1.get();
  for (const auto& outcome : job.outcomes()) EXPECT_EQ(outcome, "");
}

// ---- exactness: dist_sync LeNet == one process with two replicas ----------

std::vector<float> weights(const nn::Net& net) {
  std::vector<float> out;
  for (const nn::Parameter& p : net.parameters()) {
    if (p.auxiliary) continue;
    const float* v = p.value.data_as<float>();
    out.insert(out.end(), v, v + p.value.size());
  }
  return out;
}

constexpr int kSteps = 4;

std::vector<float> reference_weights() {
  auto net = lenet();
  train::TrainerOptions options;
  options.extra_contexts = {single_thread_cpu()};
  train::Trainer trainer(net, sgd(0.05), kvstore::KVStore::create("local"), options);
  const auto [images, labels] = batch(0, 16);
  for (int step = 0; step < kSteps; ++step) trainer.train_batch(images, labels);
  return weights(*net);
}

std::vector<float> dist_weights(const std::string& name) {
  InprocJob job(name, 2, 2);
  auto run = [&](int rank) {
    auto net = lenet();
    train::Trainer trainer(net, sgd(0.025), std::shared_ptr<kvstore::KVStore>(job.worker("dist_sync", rank)));
    const auto [images, labels] = batch(rank * 8, rank * 8 + 8);
    for (int step = 0; step < kSteps; ++step) trainer.train_batch(images, labels);
    return weights(*net);
  };
  auto w0 = std::async(std::launch::async, run, 0);
  auto w1 = std::async(std::launch::async, run, 1);
  EXPECT_EQ(w0.wait_for(60s), std::future_status::ready);
  EXPECT_EQ(w1.wait_for(60s), std::future_status::ready);
  const auto a = w0.get(), b = w1.get();
  EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float))) << "workers disagree";
  for (const auto& outcome : job.outcomes()) EXPECT_EQ(outcome, "");
  return a;
}

TEST(PsDataInproc, DistSyncLenetIsBitIdenticalToALocalKvstoreAndToItself) {
  const auto expected = reference_weights();
  const auto first = dist_weights("exact-1");
  const auto second = dist_weights("exact-2");
  ASSERT_EQ(first.size(), expected.size());
  EXPECT_EQ(0, std::memcmp(first.data(), expected.data(), expected.size() * sizeof(float)))
      << "dist_sync differs from the local kvstore";
  EXPECT_EQ(0, std::memcmp(first.data(), second.data(), first.size() * sizeof(float))) << "runs differ";
}

TEST(PsDataInproc, AsyncPushesAreAllApplied) {
  InprocJob job("async", 2, 2);
  auto run = [&](int rank) {
    auto kv = job.worker("dist_async", rank);
    kv->init({5}, {array(std::vector<float>(3000, 0.0f))});
    kv->set_optimizer(optim::OptimizerConfig("sgd").set("learning_rate", 1.0).set("wd", 0.0));
    for (int i = 0; i < 50; ++i) kv->push({5}, {array(std::vector<float>(3000, -1.0f))}, 0);
    kv->barrier();
    NDArray out = array(std::vector<float>(3000, 0.0f));
    kv->pull({5}, {out}, 0);
    for (float v : values(out)) EXPECT_EQ(v, 100.0f);
    const auto state = kv->optimizer_state("opt.");
    EXPECT_FALSE(state.empty());
  };
  auto w0 = std::async(std::launch::async, run, 0);
  auto w1 = std::async(std::launch::async, run, 1);
  ASSERT_EQ(w0.wait_for(30s), std::future_status::ready);
  ASSERT_EQ(w1.wait_for(30s), std::future_status::ready);
  w0.get();
  w1.get();
  for (const auto& outcome : job.outcomes()) EXPECT_EQ(outcome, "");
}

TEST(PsDataInproc, WorkerLeavingMidRoundFailsTheOtherWithPeerLost) {
  InprocJob job("lost", 1, 2);
  auto survivor = std::async(std::launch::async, [&] {
    auto kv = job.worker("dist_sync", 0);
    kv->init({1}, {array({0})});
    NDArray out = array({0});
    const auto start = std::chrono::steady_clock::now();
    try {
      // Worker 1 never pushes round 1: the pull waits until it is lost.
      kv->pushpull({1}, {array({1})}, {out}, 0);
      ADD_FAILURE() << "the round completed without worker 1";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kPeerLost) << e.what();
      EXPECT_NE(std::string(e.what()).find("worker 1"), std::string::npos) << e.what();
    }
    EXPECT_LT(std::chrono::steady_clock::now() - start, 4s);
  });
  {
    // Worker 1 joins, inits, and vanishes without saying goodbye: its
    // heartbeats stop as a crashed process's would.
    JobConfig job1 = inproc_job(inproc_url("lost"), Role::kWorker, 1, 2, 1);
    ClusterMember member(job1, fast_options());
    std::this_thread::sleep_for(300ms);
  }
  ASSERT_EQ(survivor.wait_for(20s), std::future_status::ready);
  survivor.get();
  for (const auto& outcome : job.outcomes()) EXPECT_NE(outcome.find("worker 1"), std::string::npos) << outcome;
}

TEST(PsDataInproc, MalformedRequestsAreRejectedAndTheServerKeepsServing) {
  ParameterServer server(1);
  const std::string url = inproc_url("malformed");
  RequestServer transport({url}, 4, [&](Message m, RequestServer::Reply r) { server.handle(std::move(m), r); },
                          kDefaultMaxMessageBytes);
  RequestClient client(url, 5s);
  auto status_of = [&](Message request) {
    Frame reply = Frame::parse(client.call(std::move(request), 5s));
    return reply.expect<wire::DataReply>().status();
  };
  auto raw = [](const std::vector<uint8_t>& bytes) {
    Message m = Message::with_capacity(bytes.size());
    if (!bytes.empty()) std::memcpy(m.grow(bytes.size()), bytes.data(), bytes.size());
    return m;
  };
  const int protocol = static_cast<int>(ErrorCode::kProtocol);
  EXPECT_EQ(status_of(raw({})), protocol);
  EXPECT_EQ(status_of(raw({0xff, 0xff, 0xff, 0x7f, 1, 2, 3})), protocol);
  // A valid init, then the same frame truncated and with a slice pointing
  // outside its payload.
  const PartInfo info{PartKey{1, 0, 2}, DType::kFloat32, Shape({2})};
  EncodedData init = encode_data_request(wire::DataOp::Init, 0, {SliceSpec{info, -1, 8}}, "dist_sync");
  const float value[2] = {4, 5};
  std::memcpy(init.slice_data[0], value, sizeof value);
  std::vector<uint8_t> bytes(init.message.data(), init.message.data() + init.message.size());
  EXPECT_EQ(status_of(raw(std::vector<uint8_t>(bytes.begin(), bytes.begin() + bytes.size() / 2))), protocol);
  EXPECT_EQ(status_of(raw(std::vector<uint8_t>(bytes.begin(), bytes.end() - 4))), protocol);
  // A part outside its tensor.
  const PartInfo outside{PartKey{1, 0, 3}, DType::kFloat32, Shape({2})};
  EXPECT_EQ(status_of(encode_data_request(wire::DataOp::Pull, 0, {SliceSpec{outside, 0, 0}}).message), protocol);
  EXPECT_EQ(status_of(std::move(init.message)), 0);
  EncodedData pull = encode_data_request(wire::DataOp::Pull, 0, {SliceSpec{info, 0, 0}});
  Frame reply = Frame::parse(client.call(std::move(pull.message), 5s));
  const auto& data = reply.expect<wire::DataReply>();
  ASSERT_EQ(data.status(), 0);
  const DecodedSlice slice = decode_slice(reply, data.slices()->Get(0));
  float got[2];
  std::memcpy(got, slice.data, sizeof got);
  EXPECT_EQ(got[0], 4.0f);
  EXPECT_EQ(got[1], 5.0f);
}

}  // namespace
}  // namespace dt::ps

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
