// A dist_sync job over tls+tcp: the scheduler and a server as dt-node
// processes, two workers as threads here, every node configured by the
// DT_TLS_* variables alone. The workers push and pull over TLS (data forced
// onto tcp, not ipc) and get exact sums; a worker with a certificate from
// another CA cannot even register, and the job's own nodes go on.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "../tls_test_certs.h"
#include "core/context.h"
#include "core/error.h"
#include "kvstore/dist_kvstore.h"
#include "process_harness.h"
#include "ps/job/job_config.h"
#include "ps/roles/worker_client.h"

namespace dt::ps {
namespace {

using core::DType;
using core::Error;
using core::ErrorCode;
using core::NDArray;
using core::Shape;
using namespace net;
using namespace std::chrono_literals;

core::NDArray array(const std::vector<float>& v) {
  NDArray a = NDArray::empty(core::make_cpu_context(), DType::kFloat32, Shape({static_cast<int64_t>(v.size())}));
  a.copy_from_host(v.data(), v.size() * sizeof(float));
  return a;
}

std::vector<float> values(const NDArray& a) {
  std::vector<float> v(a.size());
  a.copy_to_host(v.data(), v.size() * sizeof(float));
  return v;
}

std::map<std::string, std::string> tls_env(const TlsFiles& files) {
  return {{"DT_TLS_CERT_FILE", files.cert_file}, {"DT_TLS_KEY_FILE", files.key_file}, {"DT_TLS_CA_FILE", files.ca_file}};
}

PsOptions fast_options() {
  PsOptions o;
  o.startup_timeout_s = 20;
  o.request_timeout_s = 20;
  o.heartbeat_interval_s = 0.2;
  o.heartbeat_timeout_s = 3;
  o.shutdown_timeout_s = 5;
  o.bigarray_bound_bytes = 4096;  // the big key is split
  return o;
}

class DistTls : public test::JobProcesses {
 protected:
  void SetUp() override {
    certs_.make_ca("job-ca");
    certs_.make_ca("other-ca");
    job_files_ = certs_.make_node("node", "job-ca");
    stranger_ = certs_.make_node("stranger", "other-ca");
    std::map<std::string, std::string> env = tls_env(job_files_);
    for (const auto& kv : std::map<std::string, std::string>{{"DMLC_NUM_SERVER", "1"},
                                                             {"DMLC_NUM_WORKER", "2"},
                                                             {"DT_STARTUP_TIMEOUT_S", "20"},
                                                             {"DT_REQUEST_TIMEOUT_S", "20"},
                                                             {"DT_HEARTBEAT_INTERVAL_S", "0.2"},
                                                             {"DT_HEARTBEAT_TIMEOUT_S", "3"},
                                                             {"DT_SHUTDOWN_TIMEOUT_S", "5"},
                                                             {"DT_BIGARRAY_BOUND_BYTES", "4096"}}) {
      env.insert(kv);
    }
    port_ = start_tcp_scheduler(env);
    env["DMLC_ROLE"] = "server";
    env["DMLC_PS_ROOT_URI"] = "127.0.0.1";
    env["DMLC_PS_ROOT_PORT"] = port_;
    spawn(dt_node(), {}, env);
  }

  // A worker's JobConfig from the variables a launcher would set.
  JobConfig worker_job(const TlsFiles& files, int rank) const {
    std::map<std::string, std::string> env = tls_env(files);
    env["DMLC_ROLE"] = "worker";
    env["DMLC_PS_ROOT_URI"] = "127.0.0.1";
    env["DMLC_PS_ROOT_PORT"] = port_;
    env["DMLC_NUM_SERVER"] = "1";
    env["DMLC_NUM_WORKER"] = "2";
    env["DMLC_WORKER_ID"] = std::to_string(rank);
    return job_config_from([&](const char* name) -> std::optional<std::string> {
      auto it = env.find(name);
      if (it == env.end()) return std::nullopt;
      return it->second;
    });
  }

  test::TlsTestCerts certs_;
  TlsFiles job_files_, stranger_;
  std::string port_;
};

TEST_F(DistTls, SyncPushPullOverTlsTcpSumsBothWorkers) {
  const JobConfig probe = worker_job(job_files_, 0);
  ASSERT_EQ(probe.root_url, "tls+tcp://127.0.0.1:" + port_);

  // Another CA's node: the scheduler refuses its handshake, so it never
  // registers; the job still waits for its real workers.
  try {
    PsOptions o = fast_options();
    o.startup_timeout_s = 2;
    kvstore::DistKVStore stranger("dist_sync", worker_job(stranger_, 1), o, DataTransport::kTcp);
    ADD_FAILURE() << "a worker with another CA's certificate joined the job";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kTimedOut) << e.what();
  }

  constexpr int64_t kBig = 5000;  // 20000 bytes: split across the bound
  const auto run = [&](int rank) {
    kvstore::DistKVStore kv("dist_sync", worker_job(job_files_, rank), fast_options(), DataTransport::kTcp);
    EXPECT_EQ(kv.num_workers(), 2);
    kv.init({1, 2}, {array({1, 2, 3}), array(std::vector<float>(kBig, 0))});
    NDArray small = array({0, 0, 0});
    NDArray big = array(std::vector<float>(kBig, 0));
    for (int step = 1; step <= 3; ++step) {
      kv.pushpull({1, 2}, {array({float(rank), 1, 2}), array(std::vector<float>(kBig, float(rank + 1) * step))},
                  {small, big}, 0);
      EXPECT_EQ(values(small), (std::vector<float>{1, 2, 4})) << "rank " << rank << " step " << step;
      for (float v : values(big)) ASSERT_EQ(v, 3.0f * step) << "rank " << rank << " step " << step;
    }
    kv.barrier();
  };
  auto w0 = std::async(std::launch::async, run, 0);
  auto w1 = std::async(std::launch::async, run, 1);
  ASSERT_EQ(w0.wait_for(60s), std::future_status::ready);
  ASSERT_EQ(w1.wait_for(60s), std::future_status::ready);
  w0.get();
  w1.get();
  for (test::Child& c : children_) {
    EXPECT_TRUE(wait_exit(c, 20s)) << test::read_file(c.err);
    EXPECT_EQ(c.status, 0) << test::read_file(c.err);
  }
}

}  // namespace
}  // namespace dt::ps

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
