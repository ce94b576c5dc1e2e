// The control plane for real: a scheduler (dt-node) and member processes over
// tcp and ipc loopback, and schedulers and members as threads over inproc.
// Member processes are this program re-executed with --member; every wait
// has a deadline and the fixture SIGKILLs whatever is still running.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <future>
#include <iostream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "inproc_job.h"
#include "process_harness.h"
#include "ps/job/job_config.h"
#include "ps/roles/cluster_member.h"
#include "ps/roles/node_table.h"
#include "ps/scheduler/scheduler.h"
#include "ps/transport/frame.h"
#include "ps/transport/request_client.h"
#include "ps/transport/request_server.h"

extern char** environ;

namespace dt::ps {
namespace {

using core::Error;
using core::ErrorCode;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;
using test::Child;
using test::read_file;

std::string self_path;

// ---- member mode: what a re-executed child does ---------------------------

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
  return o;
}

int exit_code_of(ErrorCode code) {
  switch (code) {
    case ErrorCode::kPeerLost:
      return 3;
    case ErrorCode::kTimedOut:
      return 4;
    default:
      return 5;
  }
}

int member_main() {
  try {
    const JobConfig job = job_config_from_env();
    const PsOptions options = options_from_env();
    // The process is up and dials the scheduler next: what a test that
    // orders registrations waits for.
    std::cout << "joining" << std::endl;
    ClusterMember member(job, options, job.role == Role::kServer ? std::vector<std::string>{"tcp://127.0.0.1:1"}
                                                                  : std::vector<std::string>{});
    std::cout << "rank " << member.rank() << std::endl;
    const char* action = std::getenv("DT_TEST_ACTION");
    const std::string what = action == nullptr ? "" : action;
    if (job.role == Role::kServer) {
      member.wait_for_stop();
    } else if (what == "hold") {
      // Barriers until something fails: the killed-peer tests end here, and
      // kill a member once every worker has passed the first.
      member.barrier();
      std::cout << "holding" << std::endl;
      for (;;) {
        member.barrier();
        std::this_thread::sleep_for(50ms);
      }
    } else {
      for (int i = 0; i < 3; ++i) member.barrier();
    }
    member.shutdown();
    return 0;
  } catch (const Error& e) {
    std::cerr << "member failed: " << e.what() << std::endl;
    return exit_code_of(e.code());
  }
}

// ---- processes ----------------------------------------------------------------

class PsProcesses : public test::JobProcesses {
 protected:
  // Scheduler (child 0), server (1) and workers 0 and 1 (2, 3) of a tcp job
  // whose workers hold in barriers once every member has its rank.
  void start_held_job(std::map<std::string, std::string> env) {
    const std::string port = start_tcp_scheduler(env);
    env["DMLC_PS_ROOT_URI"] = "127.0.0.1";
    env["DMLC_PS_ROOT_PORT"] = port;
    env["DT_TEST_ACTION"] = "hold";
    auto server_env = env, w0 = env, w1 = env;
    server_env["DMLC_ROLE"] = "server";
    w0["DMLC_ROLE"] = w1["DMLC_ROLE"] = "worker";
    w0["DMLC_WORKER_ID"] = "0";
    w1["DMLC_WORKER_ID"] = "1";
    spawn(self_path, {"--member"}, server_env);
    spawn(self_path, {"--member"}, w0);
    spawn(self_path, {"--member"}, w1);
    for (size_t i = 1; i < 4; ++i) ASSERT_TRUE(wait_output(children_[i], "rank", 20s));
    for (size_t i : {size_t{2}, size_t{3}}) ASSERT_TRUE(wait_output(children_[i], "holding", 20s));
  }
};

std::map<std::string, std::string> fast_job(int servers, int workers) {
  return test::fast_job_env(servers, workers, "1");
}


TEST_F(PsProcesses, TcpRegistrationRanksBarriersAndCleanShutdown) {
  auto env = fast_job(1, 2);
  const std::string port = start_tcp_scheduler(env);
  env["DMLC_PS_ROOT_URI"] = "localhost";
  env["DMLC_PS_ROOT_PORT"] = port;
  auto server_env = env, w1 = env, w0 = env;
  server_env["DMLC_ROLE"] = "server";
  w1["DMLC_ROLE"] = w0["DMLC_ROLE"] = "worker";
  w1["DMLC_WORKER_ID"] = "1";
  w0["DMLC_WORKER_ID"] = "0";
  // Worker 1 registers first and must still get rank 1: it is dialing
  // before worker 0's process is even started.
  spawn(self_path, {"--member"}, w1);
  ASSERT_TRUE(wait_output(children_[1], "joining", 20s));
  spawn(self_path, {"--member"}, w0);
  spawn(self_path, {"--member"}, server_env);
  for (size_t i = 1; i < children_.size(); ++i) {
    ASSERT_TRUE(wait_exit(children_[i], 20s)) << "member " << i << " hung";
    EXPECT_EQ(children_[i].status, 0) << read_file(children_[i].err);
  }
  EXPECT_NE(read_file(children_[1].out).find("rank 1"), std::string::npos);
  EXPECT_NE(read_file(children_[2].out).find("rank 0"), std::string::npos);
  Child& scheduler = children_[0];
  ASSERT_TRUE(wait_exit(scheduler, 10s));
  EXPECT_EQ(scheduler.status, 0) << read_file(scheduler.err);
}

TEST_F(PsProcesses, IpcJobWithMembersStartedBeforeTheScheduler) {
  auto env = fast_job(2, 1);
  env["DT_PS_ROOT_URL"] = "ipc:///tmp/dt-ps-sched-" + std::to_string(::getpid()) + ".ipc";
  auto server_env = env, worker_env = env;
  server_env["DMLC_ROLE"] = "server";
  worker_env["DMLC_ROLE"] = "worker";
  spawn(self_path, {"--member"}, server_env);
  spawn(self_path, {"--member"}, server_env);
  spawn(self_path, {"--member"}, worker_env);
  // The scheduler comes last, when every member is already dialing it.
  for (size_t i = 0; i < 3; ++i) ASSERT_TRUE(wait_output(children_[i], "joining", 20s));
  auto sched_env = env;
  sched_env["DMLC_ROLE"] = "scheduler";
  Child& scheduler = spawn(dt_node(), {}, sched_env);
  for (size_t i = 0; i < 3; ++i) {
    ASSERT_TRUE(wait_exit(children_[i], 20s)) << "member " << i << " hung";
    EXPECT_EQ(children_[i].status, 0) << read_file(children_[i].err);
  }
  const std::string ranks = read_file(children_[0].out) + read_file(children_[1].out);
  EXPECT_NE(ranks.find("rank 0"), std::string::npos);
  EXPECT_NE(ranks.find("rank 1"), std::string::npos);
  ASSERT_TRUE(wait_exit(scheduler, 10s));
  EXPECT_EQ(scheduler.status, 0) << read_file(scheduler.err);
}

TEST_F(PsProcesses, KilledWorkerIsReportedAsPeerLostByEveryone) {
  start_held_job(fast_job(1, 2));
  if (HasFatalFailure()) return;
  Child& victim = children_[3];
  const auto killed_at = Clock::now();
  ::kill(victim.pid, SIGKILL);
  ASSERT_TRUE(wait_exit(victim, 5s));
  const std::string name = "worker 1 (pid " + std::to_string(victim.pid);
  // Heartbeat timeout 1 s: everyone must know within 2 s.
  for (size_t i : {size_t{0}, size_t{1}, size_t{2}}) {
    ASSERT_TRUE(wait_exit(children_[i], 5s)) << "process " << i << " hung after the kill";
    EXPECT_NE(children_[i].status, 0);
    EXPECT_NE(read_file(children_[i].err).find(name), std::string::npos) << read_file(children_[i].err);
  }
  EXPECT_EQ(children_[2].status, 3) << "worker 0 should fail with peer lost";
  EXPECT_LT(Clock::now() - killed_at, 2s + 500ms) << "loss detected too late";
}

TEST_F(PsProcesses, KilledSchedulerIsSeenAtOnceAndNamed) {
  auto env = fast_job(1, 2);
  // A heartbeat timeout far longer than the allowed detection time: only
  // the closed connection can tell the nodes in time.
  env["DT_HEARTBEAT_TIMEOUT_S"] = "20";
  start_held_job(env);
  if (HasFatalFailure()) return;
  Child& scheduler = children_[0];
  const auto killed_at = Clock::now();
  ::kill(scheduler.pid, SIGKILL);
  ASSERT_TRUE(wait_exit(scheduler, 5s));
  const std::string name = "scheduler (pid " + std::to_string(scheduler.pid);
  for (size_t i : {size_t{1}, size_t{2}, size_t{3}}) {
    ASSERT_TRUE(wait_exit(children_[i], 10s)) << "process " << i << " hung after the kill";
    EXPECT_EQ(children_[i].status, 3) << "process " << i << " should fail with peer lost: "
                                      << read_file(children_[i].err);
    EXPECT_NE(read_file(children_[i].err).find(name), std::string::npos) << read_file(children_[i].err);
  }
  EXPECT_LT(Clock::now() - killed_at, 3s) << "the scheduler's loss was seen too late";
}

TEST_F(PsProcesses, UnreachableSchedulerTimesOutAtStartup) {
  std::string url;
  {
    RequestServer probe({"tcp://127.0.0.1:0"}, 1, [](Message, RequestServer::Reply) {}, 4096);
    url = probe.bound_urls().front();
  }
  auto env = fast_job(1, 1);
  env["DMLC_ROLE"] = "worker";
  env["DMLC_PS_ROOT_URI"] = "127.0.0.1";
  env["DMLC_PS_ROOT_PORT"] = url.substr(url.rfind(':') + 1);
  env["DT_STARTUP_TIMEOUT_S"] = "1";
  const auto start = Clock::now();
  Child& worker = spawn(self_path, {"--member"}, env);
  ASSERT_TRUE(wait_exit(worker, 10s));
  EXPECT_EQ(worker.status, 4) << read_file(worker.err);
  EXPECT_NE(read_file(worker.err).find("unreachable for 1.0 s"), std::string::npos) << read_file(worker.err);
  EXPECT_LT(Clock::now() - start, 5s);
}

TEST_F(PsProcesses, SchedulerPortInUseIsANetworkError) {
  RequestServer holder({"tcp://0.0.0.0:0"}, 1, [](Message, RequestServer::Reply) {}, 4096);
  const std::string url = holder.bound_urls().front();
  auto env = fast_job(1, 1);
  env["DMLC_ROLE"] = "scheduler";
  env["DMLC_PS_ROOT_URI"] = "127.0.0.1";
  env["DMLC_PS_ROOT_PORT"] = url.substr(url.rfind(':') + 1);
  Child& scheduler = spawn(dt_node(), {}, env);
  ASSERT_TRUE(wait_exit(scheduler, 10s));
  EXPECT_EQ(scheduler.status, 1);
  const std::string err = read_file(scheduler.err);
  EXPECT_NE(err.find("address in use"), std::string::npos) << err;
  EXPECT_NE(err.find("network"), std::string::npos) << err;
}

// ---- threads over inproc ----------------------------------------------------

using test::fast_options;
using test::inproc_job;

std::string inproc_url() {
  static int n = 0;
  return "inproc://ps-it-" + std::to_string(::getpid()) + "-" + std::to_string(n++);
}

TEST(PsThreads, RegistrationBarrierAndShutdownOverInproc) {
  const std::string url = inproc_url();
  Scheduler scheduler(inproc_job(url, Role::kScheduler, 2, 2), fast_options());
  auto done = std::async(std::launch::async, [&] { scheduler.run(); });
  auto server = [&](int) {
    ClusterMember m(inproc_job(url, Role::kServer, 2, 2), fast_options(), {"inproc://data"});
    m.wait_for_stop();
    return m.rank();
  };
  auto worker = [&](int id) {
    ClusterMember m(inproc_job(url, Role::kWorker, 2, 2, id), fast_options());
    EXPECT_EQ(m.table().workers.size(), 2u);
    EXPECT_EQ(m.table().servers.size(), 2u);
    EXPECT_EQ(m.table().servers[0].data_urls, std::vector<std::string>{"inproc://data"});
    for (int i = 0; i < 5; ++i) m.barrier();
    m.shutdown();
    return m.rank();
  };
  auto s0 = std::async(std::launch::async, server, 0);
  auto s1 = std::async(std::launch::async, server, 1);
  auto w1 = std::async(std::launch::async, worker, 1);
  auto w0 = std::async(std::launch::async, worker, 0);
  for (auto* f : {&s0, &s1, &w0, &w1}) ASSERT_EQ(f->wait_for(20s), std::future_status::ready);
  EXPECT_EQ(w0.get(), 0);
  EXPECT_EQ(w1.get(), 1);
  EXPECT_EQ(s0.get() + s1.get(), 1);  // ranks 0 and 1
  ASSERT_EQ(done.wait_for(10s), std::future_status::ready);
  done.get();
}

TEST(PsThreads, DuplicateWorkerIdIsRejected) {
  const std::string url = inproc_url();
  PsOptions o = fast_options();
  o.startup_timeout_s = 2;
  Scheduler scheduler(inproc_job(url, Role::kScheduler, 1, 2), o);
  auto done = std::async(std::launch::async, [&] {
    try {
      scheduler.run();
    } catch (const Error&) {
    }
  });
  // Two workers claim id 0 at once: whichever registers second is refused
  // (the message it returns); the other waits for a job that never completes.
  const auto claim_id_0 = [&]() -> std::string {
    try {
      ClusterMember m(inproc_job(url, Role::kWorker, 1, 2, 0), o);
    } catch (const Error& e) {
      if (e.code() == ErrorCode::kInvalidArgument) return e.what();
    }
    return "";
  };
  auto a = std::async(std::launch::async, claim_id_0);
  auto b = std::async(std::launch::async, claim_id_0);
  ASSERT_EQ(a.wait_for(10s), std::future_status::ready);
  ASSERT_EQ(b.wait_for(10s), std::future_status::ready);
  const std::string outcomes[] = {a.get(), b.get()};
  const auto refused = std::count_if(std::begin(outcomes), std::end(outcomes), [](const std::string& outcome) {
    return outcome.find("DMLC_WORKER_ID=0 is already taken") != std::string::npos;
  });
  EXPECT_EQ(refused, 1) << outcomes[0] << "\n" << outcomes[1];
  ASSERT_EQ(done.wait_for(10s), std::future_status::ready);
}

TEST(PsThreads, MismatchedProtocolVersionIsAProtocolError) {
  const std::string url = inproc_url();
  Scheduler scheduler(inproc_job(url, Role::kScheduler, 1, 1), fast_options());
  RequestClient client(scheduler.url(), 5s);
  flatbuffers::FlatBufferBuilder fbb;
  auto reg = wire::CreateRegister(fbb, wire::Role::Worker, fbb.CreateString("h"), 1, 0, -1, 1, 1);
  wire::FinishEnvelopeBuffer(fbb, wire::CreateEnvelope(fbb, kProtocolVersion + 1, wire::Body::Register, reg.Union()));
  const Frame reply = Frame::parse(client.call(encode_frame(fbb.GetBufferPointer(), fbb.GetSize(), 0, nullptr), 5s));
  try {
    reply.expect<wire::NodeTable>();
    FAIL() << "registered with a foreign version";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kProtocol);
    const std::string text = e.what();
    EXPECT_NE(text.find("version " + std::to_string(kProtocolVersion + 1)), std::string::npos) << text;
    EXPECT_NE(text.find("version " + std::to_string(kProtocolVersion)), std::string::npos) << text;
  }
}

// Server rejoin at the control plane (DT_SERVER_REPLICATION=1). A server
// registering after the job started takes a departed server's place; one
// that does not beat within the heartbeat timeout (it never got the job's
// settings) is dropped unannounced, and its late heartbeat is told so. The
// next one is announced at its first heartbeat, and members hear the loss
// and the rejoin in that order. The rejoiners speak raw frames, so that
// each has a pid of its own in this one process.
TEST(PsThreads, AServerRejoinsInADepartedPlaceAndIsAnnouncedAtItsFirstHeartbeat) {
  const std::string url = inproc_url();
  PsOptions o = fast_options();
  o.server_replicas = 1;
  Scheduler scheduler(inproc_job(url, Role::kScheduler, 2, 1), o);
  auto done = std::async(std::launch::async, [&] {
    try {
      scheduler.run();
    } catch (const Error&) {
    }
  });
  const auto member = [&](Role role) {
    return std::async(std::launch::async, [&, role] {
      return std::make_unique<ClusterMember>(inproc_job(url, role, 2, 1, role == Role::kWorker ? 0 : -1), o,
                                             std::vector<std::string>{"inproc://rejoin-data"});
    });
  };
  auto f0 = member(Role::kServer);
  auto f1 = member(Role::kServer);
  auto fw = member(Role::kWorker);
  for (auto* f : {&f0, &f1, &fw}) ASSERT_EQ(f->wait_for(20s), std::future_status::ready);
  std::unique_ptr<ClusterMember> worker = fw.get();
  std::unique_ptr<ClusterMember> s0 = f0.get();
  std::unique_ptr<ClusterMember> s1 = f1.get();
  if (s0->rank() == 1) std::swap(s0, s1);
  std::mutex mutex;
  std::vector<std::string> news;
  worker->on_server_change([&](const ClusterMember::ServerNews& n) {
    std::lock_guard<std::mutex> lock(mutex);
    news.push_back(n.change.rejoined ? "rejoined " + std::to_string(n.rejoined.rank) + " pid " +
                                           std::to_string(n.rejoined.pid)
                                     : "lost " + std::to_string(n.lost.rank));
  });
  const auto heard = [&](size_t count) {
    const auto end = std::chrono::steady_clock::now() + 10s;
    for (;;) {
      {
        std::lock_guard<std::mutex> lock(mutex);
        if (news.size() >= count) return news;
      }
      if (std::chrono::steady_clock::now() > end) return news;
      std::this_thread::sleep_for(10ms);
    }
  };
  s1.reset();  // its connection closes without a goodbye: lost, and departed
  EXPECT_EQ(heard(1), std::vector<std::string>{"lost 1"});

  const auto register_server = [&](RequestClient& client, int64_t pid) {
    flatbuffers::FlatBufferBuilder fbb;
    auto reg = wire::CreateRegister(fbb, wire::Role::Server, fbb.CreateString("127.0.0.1"), pid,
                                    fbb.CreateVectorOfStrings(std::vector<std::string>{"inproc://rejoined"}), -1, 2, 1);
    return read_node_table(Frame::parse(client.call(make_message(fbb, reg), 5s)).expect<wire::NodeTable>());
  };
  const auto heartbeat = [&](RequestClient& client) {
    flatbuffers::FlatBufferBuilder fbb;
    return Frame::parse(client.call(make_message(fbb, wire::CreateHeartbeat(fbb, wire::Role::Server, 1, 0)), 5s));
  };
  // A rejoiner that stays silent past the heartbeat timeout (1 s).
  RequestClient slow(scheduler.url(), 5s);
  const NodeTable first = register_server(slow, 900001);
  EXPECT_TRUE(first.joined_running_job);
  EXPECT_EQ(first.your_rank, 1);
  std::this_thread::sleep_for(1800ms);
  try {
    heartbeat(slow).expect<wire::HeartbeatReply>();
    ADD_FAILURE() << "a dropped rejoiner's heartbeat was answered";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kPeerLost);
    EXPECT_NE(std::string(e.what()).find("dropped before it had rejoined"), std::string::npos) << e.what();
  }
  // Nobody heard of it.
  EXPECT_EQ(heard(1), std::vector<std::string>{"lost 1"});
  // The next one takes the place and beats at once: announced.
  RequestClient quick(scheduler.url(), 5s);
  const NodeTable second = register_server(quick, 900002);
  EXPECT_EQ(second.your_rank, 1);
  ASSERT_EQ(second.servers.size(), 2u);
  EXPECT_EQ(second.servers[1].pid, 900002);
  const Frame reply = heartbeat(quick);
  const auto& beat = reply.expect<wire::HeartbeatReply>();
  ASSERT_NE(beat.rejoined(), nullptr);
  ASSERT_EQ(beat.rejoined()->size(), 1u);
  const RejoinedServer back = read_rejoined_server(*beat.rejoined()->Get(0));
  EXPECT_EQ(back.node.rank, 1);
  EXPECT_EQ(back.after_departures, 1u);
  EXPECT_EQ(heard(2), (std::vector<std::string>{"lost 1", "rejoined 1 pid 900002"}));
  quick.close();
  slow.close();
  worker->shutdown();
  s0->wait_for_stop();
  ASSERT_EQ(done.wait_for(15s), std::future_status::ready);
}

TEST(PsThreads, MismatchedJobLayoutIsRejected) {
  const std::string url = inproc_url();
  Scheduler scheduler(inproc_job(url, Role::kScheduler, 1, 1), fast_options());
  try {
    ClusterMember m(inproc_job(url, Role::kWorker, 1, 3), fast_options());
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("DMLC_NUM_WORKER=3"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace dt::ps

int main(int argc, char** argv) {
  dt::ps::self_path = dt::test::self_executable();
  return dt::test::member_or_tests(argc, argv, "--member", dt::ps::member_main);
}
