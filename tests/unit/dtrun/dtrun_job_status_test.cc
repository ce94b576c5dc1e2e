// dtrun's live job summary (job_status.h) and the status lines the trainers
// and servers write (src/core/status_line.h): the line per interval, the
// table, the parse of a file's line, the default interval, and which
// processes get a file.
#include "job_status.h"

#include <gtest/gtest.h>

#include "options.h"

#include <string>
#include <vector>

namespace dt::dtrun {
namespace {

core::WorkerStatus numbers(int64_t steps, int64_t images, uint64_t sent, uint64_t received, double compute,
                           double exchange) {
  core::WorkerStatus n;
  n.steps = steps;
  n.images = images;
  n.traffic.bytes_sent = sent;
  n.traffic.bytes_received = received;
  n.compute_s = compute;
  n.exchange_s = exchange;
  n.wall_s = compute + exchange;
  return n;
}

core::ServerStatus server(int64_t requests, uint64_t sent, uint64_t received, double compute, double communicate,
                          double waiting) {
  core::ServerStatus n;
  n.requests = requests;
  n.traffic.bytes_sent = sent;
  n.traffic.bytes_received = received;
  n.compute_s = compute;
  n.communicate_s = communicate;
  n.waiting_s = waiting;
  n.wall_s = compute + communicate + waiting;
  return n;
}

TEST(DtrunJobStatus, StatusLineRoundTrips) {
  const core::WorkerStatus n = numbers(12, 768, 1000, 2000, 1.25, 0.5);
  core::WorkerStatus back;
  ASSERT_TRUE(core::parse_status(core::format_status(n), back));
  EXPECT_EQ(back.steps, 12);
  EXPECT_EQ(back.images, 768);
  EXPECT_EQ(back.traffic.bytes_sent, 1000u);
  EXPECT_EQ(back.traffic.bytes_received, 2000u);
  EXPECT_DOUBLE_EQ(back.compute_s, 1.25);
  EXPECT_DOUBLE_EQ(back.exchange_s, 0.5);
  // Half a line (never written: the file is renamed into place) or junk.
  EXPECT_FALSE(core::parse_status("steps=12 images=7", back));
  EXPECT_FALSE(core::parse_status("steps=x images=1 bytes_sent=1 bytes_received=1 compute_s=1 exchange_s=1 wall_s=1",
                                  back));
  EXPECT_EQ(back.steps, 12);
  // A later writer's words are skipped.
  ASSERT_TRUE(core::parse_status(core::format_status(n) + " gpu_s=3", back));
}

TEST(DtrunJobStatus, ServerStatusLineRoundTrips) {
  const core::ServerStatus n = server(480, 3000, 4000, 0.125, 0.5, 1.25);
  const std::string line = core::format_status(n);
  EXPECT_EQ(line,
            "requests=480 bytes_sent=3000 bytes_received=4000 compute_s=0.125 communicate_s=0.500 waiting_s=1.250 "
            "wall_s=1.875");
  core::ServerStatus back;
  ASSERT_TRUE(core::parse_status(line, back));
  EXPECT_EQ(back.requests, 480);
  EXPECT_EQ(back.traffic.bytes_sent, 3000u);
  EXPECT_EQ(back.traffic.bytes_received, 4000u);
  EXPECT_DOUBLE_EQ(back.compute_s, 0.125);
  EXPECT_DOUBLE_EQ(back.communicate_s, 0.5);
  EXPECT_DOUBLE_EQ(back.waiting_s, 1.25);
  EXPECT_DOUBLE_EQ(back.wall_s, 1.875);
  // The two kinds are not taken for each other, and numbers stay as they
  // were on a line that is not one.
  core::WorkerStatus worker;
  EXPECT_FALSE(core::parse_status(line, worker));
  EXPECT_FALSE(core::parse_status(core::format_status(numbers(1, 2, 3, 4, 5, 6)), back));
  EXPECT_FALSE(core::parse_status("requests=1 bytes_sent=1 bytes_received=1 compute_s=1 communicate_s=1 "
                                  "waiting_s=1 wall_s=1s",
                                  back));
  EXPECT_EQ(back.requests, 480);
}

TEST(DtrunJobStatus, LineNamesEveryWorkerTheSlowestAndTheRates) {
  const JobNumbers before{{numbers(10, 320, 0, 0, 1, 1), numbers(8, 256, 0, 0, 1, 1)}, {}};
  const JobNumbers now{{numbers(20, 640, 2000000, 1000000, 2, 2), numbers(12, 384, 0, 0, 2, 2)}, {}};
  const std::string line = JobStatus::line(12.4, now, before, 2.0, 1, 0);
  EXPECT_EQ(line,
            "dtrun status at 12 s: worker 0 step 20 160.0 img/s, worker 1 step 12 64.0 img/s; slowest worker 1, 8 "
            "steps behind; in 500.0 kB/s, out 1.00 MB/s; restarts 1, losses 0")
      << line;
  const std::string first =
      JobStatus::line(1, {{numbers(0, 0, 0, 0, 0, 0), numbers(1, 32, 0, 0, 0, 0)}, {}}, {}, 1, 0, 0);
  EXPECT_NE(first.find("worker 0 no step yet, worker 1 step 1 32.0 img/s; slowest worker 0, 1 steps behind"),
            std::string::npos)
      << first;
}

TEST(DtrunJobStatus, LineGivesEachServersRequestsAndBusyShare) {
  // Server 0: 400 requests in 2 s, busy 0.5 of the 1 s between its two
  // writes; server 1 started again in place (its counts went down): its
  // own numbers; server 2 has served nothing yet.
  const JobNumbers before{{numbers(10, 320, 0, 0, 1, 1)},
                          {server(100, 0, 0, 1, 1, 2), server(900, 0, 0, 5, 5, 5), server(0, 0, 0, 0, 0, 0)}};
  const JobNumbers now{{numbers(20, 640, 0, 0, 2, 2)},
                       {server(500, 0, 0, 1.25, 1.25, 2.5), server(50, 0, 0, 0.5, 0.5, 1), server(0, 0, 0, 0, 0, 0)}};
  const std::string line = JobStatus::line(30, now, before, 2.0, 0, 1);
  EXPECT_EQ(line,
            "dtrun status at 30 s: worker 0 step 20 160.0 img/s; server 0 200.0 req/s 50% busy, server 1 25.0 req/s "
            "50% busy, server 2 no request yet; in 0 B/s, out 0 B/s; restarts 0, losses 1")
      << line;
  // A server whose file was not rewritten since the last line: nothing served.
  const std::string same = JobStatus::line(31, now, now, 1.0, 0, 0);
  EXPECT_NE(same.find("server 0 0.0 req/s 0% busy"), std::string::npos) << same;
}

TEST(DtrunJobStatus, TableEstimatesTheWaitFromTheLeastExchange) {
  const std::string table =
      JobStatus::table({{numbers(100, 3200, 5000000, 5000000, 10, 3), numbers(100, 3200, 0, 0, 12, 1)}, {}});
  EXPECT_NE(table.find("dtrun summary per process"), std::string::npos) << table;
  EXPECT_NE(table.find("worker 0          100       3200     10.000          1.000     2.000    13.000        5.000 "
                       "       5.000"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("worker 1          100       3200     12.000          1.000     0.000    13.000"),
            std::string::npos)
      << table;
  EXPECT_EQ(JobStatus::table({{numbers(0, 0, 0, 0, 0, 0)}, {server(0, 0, 0, 0, 0, 0)}}), "");
}

TEST(DtrunJobStatus, TableHasARowPerServer) {
  const std::string table = JobStatus::table({{numbers(100, 3200, 5000000, 5000000, 10, 3)},
                                              {server(1200, 2500000, 2600000, 1.5, 2.25, 9.25),
                                               server(0, 0, 0, 0, 0, 0)}});
  EXPECT_NE(table.find("process    steps/reqs     images  compute_s  communicate_s waiting_s    wall_s      sent_MB "
                       " received_MB\n"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("\nserver 0         1200          -      1.500          2.250     9.250    13.000        2.500 "
                       "       2.600\n"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("\nserver 1   no request\n"), std::string::npos) << table;
  // Workers first, then servers.
  EXPECT_LT(table.find("worker 0"), table.find("server 0"));
  // Servers alone (no worker stepped) still make a table.
  EXPECT_NE(JobStatus::table({{numbers(0, 0, 0, 0, 0, 0)}, {server(5, 1, 1, 0, 0, 1)}}).find("server 0"),
            std::string::npos);
}

TEST(DtrunJobStatus, OnByDefaultOnlyOnATerminal) {
  EXPECT_EQ(status_interval(-1, true), 10);
  EXPECT_EQ(status_interval(-1, false), 0);
  EXPECT_EQ(status_interval(0, true), 0);
  EXPECT_EQ(status_interval(2.5, false), 2.5);
}

TEST(DtrunJobStatus, WorkersAndServersGetAFileWhenOn) {
  // On by default on a terminal: every worker and server gets its own file,
  // the scheduler none.
  const JobStatus on("/tmp/job/status", 2, 2, status_interval(-1, true), 0);
  EnvMap worker;
  EnvMap server;
  EnvMap scheduler;
  on.add_environment(Role::kWorker, 1, worker);
  on.add_environment(Role::kServer, 1, server);
  on.add_environment(Role::kScheduler, -1, scheduler);
  EXPECT_EQ(worker["DT_STATUS_FILE"], "/tmp/job/status/worker-1.status");
  EXPECT_EQ(server["DT_STATUS_FILE"], "/tmp/job/status/server-1.status");
  EXPECT_EQ(server["DT_STATUS_EVERY_S"], "5.000");
  EXPECT_TRUE(scheduler.empty());
  // Off (not a terminal, no --status-every): nobody writes one.
  const JobStatus off("/tmp/job/status", 2, 2, status_interval(-1, false), 0);
  EnvMap none;
  off.add_environment(Role::kWorker, 0, none);
  off.add_environment(Role::kServer, 0, none);
  EXPECT_TRUE(none.empty());
}

TEST(DtrunJobStatus, StatusEveryOption) {
  EXPECT_EQ(parse_options({"-n", "2", "--status-every", "1.5", "train"}).status_every_s, 1.5);
  EXPECT_EQ(parse_options({"-n", "2", "--status-every=0", "train"}).status_every_s, 0);
  EXPECT_EQ(parse_options({"-n", "2", "train"}).status_every_s, -1);
  EXPECT_THROW(parse_options({"-n", "2", "--status-every", "-1", "train"}), UsageError);
  // Other launchers relay the numbers through the scheduler: no note that
  // the option is ignored.
  const Options ssh = parse_options({"-n", "2", "--launcher", "ssh", "-H", "hosts", "--status-every", "1", "train"});
  for (const std::string& note : ssh.notes) EXPECT_EQ(note.find("--status-every"), std::string::npos) << note;
}

TEST(DtrunJobStatus, RelayedTheSchedulerGetsTheFolder) {
  // Processes on other hosts: no file of their own, the interval turns
  // their reports on, and the scheduler writes the files in the folder.
  const JobStatus relayed("/tmp/job/status", 2, 1, 4, 0, true);
  EnvMap worker;
  EnvMap server;
  EnvMap scheduler;
  relayed.add_environment(Role::kWorker, 1, worker);
  relayed.add_environment(Role::kServer, 0, server);
  relayed.add_environment(Role::kScheduler, -1, scheduler);
  EXPECT_EQ(worker.count("DT_STATUS_FILE"), 0u);
  EXPECT_EQ(worker["DT_STATUS_EVERY_S"], "2.000");
  EXPECT_EQ(server["DT_STATUS_EVERY_S"], "2.000");
  EXPECT_TRUE(scheduler.empty());
  EXPECT_EQ(relayed.scheduler_environment(), (EnvMap{{"DT_STATUS_DIR", "/tmp/job/status"}}));
  // Local: the processes write their own files, the scheduler gets nothing.
  EXPECT_TRUE(JobStatus("/tmp/job/status", 2, 1, 4, 0).scheduler_environment().empty());
  // Off: nothing for anyone.
  const JobStatus off("/tmp/job/status", 2, 1, 0, 0, true);
  EnvMap none;
  off.add_environment(Role::kWorker, 0, none);
  EXPECT_TRUE(none.empty());
  EXPECT_TRUE(off.scheduler_environment().empty());
}

}  // namespace
}  // namespace dt::dtrun
