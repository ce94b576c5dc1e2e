// dtrun's live summary relayed through the scheduler
// (ps/scheduler/status_relay.h): a report becomes the status file dtrun
// reads, hostile numbers are dropped with the last good file kept, and a
// real scheduler writes the files of a worker and a server whose heartbeats
// carry their numbers (ClusterMember::report_status).
#include "ps/scheduler/status_relay.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <future>
#include <limits>
#include <string>
#include <thread>

#include "core/status_line.h"
#include "integration/inproc_job.h"
#include "ps/roles/cluster_member.h"
#include "ps/scheduler/scheduler.h"

namespace dt::ps {
namespace {

using namespace std::chrono_literals;

// A folder of its own, removed at the end.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "status_relay_test.XXXXXX").string();
    path_ = ::mkdtemp(pattern.data()) != nullptr ? pattern : "";
  }
  ~TempDir() {
    std::error_code ignored;
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// The file's line ("" when there is none).
std::string read_line(const std::string& file) {
  std::ifstream in(file);
  std::string line;
  std::getline(in, line);
  return line;
}

core::WorkerStatus worker_numbers(int64_t steps, double wall_s) {
  core::WorkerStatus n;
  n.steps = steps;
  n.images = steps * 64;
  n.traffic.bytes_sent = 1000;
  n.traffic.bytes_received = 2000;
  n.compute_s = 0.5;
  n.exchange_s = 0.25;
  n.wall_s = wall_s;
  return n;
}

// A heartbeat from role's rank with a worker's report, a server's report,
// or neither.
class Heartbeat {
 public:
  Heartbeat(Role role, const core::WorkerStatus* worker, const core::ServerStatus* server) {
    flatbuffers::Offset<wire::WorkerStatusReport> w;
    flatbuffers::Offset<wire::ServerStatusReport> s;
    if (worker != nullptr) {
      w = wire::CreateWorkerStatusReport(fbb_, worker->steps, worker->images, worker->traffic.bytes_sent,
                                         worker->traffic.bytes_received, worker->compute_s, worker->exchange_s,
                                         worker->wall_s);
    }
    if (server != nullptr) {
      s = wire::CreateServerStatusReport(fbb_, server->requests, server->traffic.bytes_sent,
                                         server->traffic.bytes_received, server->compute_s, server->communicate_s,
                                         server->waiting_s, server->wall_s);
    }
    fbb_.Finish(wire::CreateHeartbeat(fbb_, to_wire(role), 0, 0, 0, w, s));
  }
  const wire::Heartbeat& get() const { return *flatbuffers::GetRoot<wire::Heartbeat>(fbb_.GetBufferPointer()); }

 private:
  flatbuffers::FlatBufferBuilder fbb_;
};

TEST(StatusRelay, AReportBecomesTheFileDtrunReads) {
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  StatusRelay relay(dir.path());
  const core::WorkerStatus sent = worker_numbers(12, 2.0);
  EXPECT_TRUE(relay.take(Role::kWorker, 1, Heartbeat(Role::kWorker, &sent, nullptr).get()));
  core::WorkerStatus read;
  ASSERT_TRUE(core::parse_status(read_line(dir.path() + "/worker-1.status"), read));
  EXPECT_EQ(read.steps, 12);
  EXPECT_EQ(read.images, 768);
  EXPECT_EQ(read.traffic.bytes_received, 2000u);
  EXPECT_DOUBLE_EQ(read.wall_s, 2.0);

  core::ServerStatus server;
  server.requests = 480;
  server.compute_s = 0.125;
  server.communicate_s = 0.5;
  server.waiting_s = 1.375;
  server.wall_s = 2;
  EXPECT_TRUE(relay.take(Role::kServer, 0, Heartbeat(Role::kServer, nullptr, &server).get()));
  core::ServerStatus read_server;
  ASSERT_TRUE(core::parse_status(read_line(dir.path() + "/server-0.status"), read_server));
  EXPECT_EQ(read_server.requests, 480);
  EXPECT_DOUBLE_EQ(read_server.waiting_s, 1.375);

  // A heartbeat without a report (the summary off) writes nothing.
  EXPECT_TRUE(relay.take(Role::kWorker, 0, Heartbeat(Role::kWorker, nullptr, nullptr).get()));
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/worker-0.status"));
}

TEST(StatusRelay, HostileNumbersAreDroppedAndTheLastGoodFileStays) {
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  StatusRelay relay(dir.path());
  const core::WorkerStatus good = worker_numbers(5, 1.0);
  ASSERT_TRUE(relay.take(Role::kWorker, 0, Heartbeat(Role::kWorker, &good, nullptr).get()));
  const std::string kept = read_line(dir.path() + "/worker-0.status");
  ASSERT_FALSE(kept.empty());

  std::vector<core::WorkerStatus> bad(7, worker_numbers(6, 1.5));
  bad[0].steps = -1;
  bad[1].images = std::numeric_limits<int64_t>::min();
  bad[2].compute_s = std::numeric_limits<double>::quiet_NaN();
  bad[3].exchange_s = std::numeric_limits<double>::infinity();
  bad[4].wall_s = -0.5;
  bad[5].wall_s = 1e12;  // beyond a century
  bad[6].traffic.bytes_sent = std::numeric_limits<uint64_t>::max();
  for (size_t i = 0; i < bad.size(); ++i) {
    EXPECT_FALSE(relay.take(Role::kWorker, 0, Heartbeat(Role::kWorker, &bad[i], nullptr).get())) << "case " << i;
    EXPECT_EQ(read_line(dir.path() + "/worker-0.status"), kept) << "case " << i;
  }
  // The other role's kind of report: a worker posing as a server.
  core::ServerStatus server;
  server.requests = 3;
  EXPECT_FALSE(relay.take(Role::kWorker, 0, Heartbeat(Role::kWorker, nullptr, &server).get()));
  EXPECT_FALSE(relay.take(Role::kServer, 1, Heartbeat(Role::kServer, &good, nullptr).get()));
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/server-1.status"));
  server.waiting_s = -std::numeric_limits<double>::infinity();
  EXPECT_FALSE(relay.take(Role::kServer, 1, Heartbeat(Role::kServer, nullptr, &server).get()));
  EXPECT_EQ(read_line(dir.path() + "/worker-0.status"), kept);

  std::string why;
  EXPECT_FALSE(read_report(*Heartbeat(Role::kWorker, &bad[0], nullptr).get().worker_status(), why));
  EXPECT_NE(why.find("steps -1 below 0"), std::string::npos) << why;
}

// Polls file until its line parses with steps or requests at least
// `least`, for up to 10 s.
template <typename Numbers>
bool wait_for_count(const std::string& file, int64_t least, Numbers& numbers) {
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < deadline) {
    if (core::parse_status(read_line(file), numbers)) {
      if constexpr (std::is_same_v<Numbers, core::WorkerStatus>) {
        if (numbers.steps >= least) return true;
      } else {
        if (numbers.requests >= least) return true;
      }
    }
    std::this_thread::sleep_for(20ms);
  }
  return false;
}

TEST(StatusRelay, ARealSchedulerWritesWhatTheHeartbeatsCarry) {
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  // dtrun sets this for the scheduler alone; this process is the scheduler here.
  ASSERT_EQ(::setenv("DT_STATUS_DIR", dir.path().c_str(), 1), 0);
  const std::string url = "inproc://status-relay-" + std::to_string(::getpid());
  // The worker beats every 3 s, so only the beat before its goodbye can
  // bring its last numbers in time; the others are patient with it.
  PsOptions options = test::fast_options();
  options.heartbeat_timeout_s = 10;
  PsOptions slow_beats = options;
  slow_beats.heartbeat_interval_s = 3;
  Scheduler scheduler(test::inproc_job(url, Role::kScheduler, 1, 1), options);
  ::unsetenv("DT_STATUS_DIR");
  auto done = std::async(std::launch::async, [&] { scheduler.run(); });
  auto server = std::async(std::launch::async, [&] {
    ClusterMember m(test::inproc_job(url, Role::kServer, 1, 1), options, {"inproc://unused"});
    core::ServerStatus numbers;
    numbers.requests = 42;
    numbers.wall_s = 3;
    numbers.waiting_s = 3;
    m.report_status_from([numbers] { return numbers; });
    m.wait_for_stop();
  });
  auto worker = std::async(std::launch::async, [&] {
    ClusterMember m(test::inproc_job(url, Role::kWorker, 1, 1, 0), slow_beats);
    m.report_status(worker_numbers(3, 1.0));
    core::WorkerStatus seen;
    EXPECT_TRUE(wait_for_count(dir.path() + "/worker-0.status", 3, seen));
    core::ServerStatus server_seen;
    EXPECT_TRUE(wait_for_count(dir.path() + "/server-0.status", 42, server_seen));
    EXPECT_DOUBLE_EQ(server_seen.waiting_s, 3);
    // The last numbers go with a heartbeat before the goodbye: the file
    // has them without waiting for the next interval.
    m.report_status(worker_numbers(9, 4.0));
    m.shutdown();
  });
  ASSERT_EQ(worker.wait_for(20s), std::future_status::ready);
  worker.get();
  core::WorkerStatus last;
  ASSERT_TRUE(core::parse_status(read_line(dir.path() + "/worker-0.status"), last));
  EXPECT_EQ(last.steps, 9);
  EXPECT_DOUBLE_EQ(last.wall_s, 4.0);
  ASSERT_EQ(server.wait_for(10s), std::future_status::ready);
  server.get();
  ASSERT_EQ(done.wait_for(10s), std::future_status::ready);
  done.get();
}

}  // namespace
}  // namespace dt::ps
