// dtrun's live job summary (job_status.h) and the status line the trainers
// write (src/train/status_line.h): the line per interval, the table, the
// parse of a file's line, and the default interval.
#include "job_status.h"

#include <gtest/gtest.h>

#include "options.h"

#include <string>
#include <vector>

namespace dt::dtrun {
namespace {

train::StatusNumbers numbers(int64_t steps, int64_t images, uint64_t sent, uint64_t received, double compute,
                             double exchange) {
  train::StatusNumbers n;
  n.steps = steps;
  n.images = images;
  n.traffic.bytes_sent = sent;
  n.traffic.bytes_received = received;
  n.compute_s = compute;
  n.exchange_s = exchange;
  n.wall_s = compute + exchange;
  return n;
}

TEST(DtrunJobStatus, StatusLineRoundTrips) {
  const train::StatusNumbers n = numbers(12, 768, 1000, 2000, 1.25, 0.5);
  train::StatusNumbers back;
  ASSERT_TRUE(train::parse_status(train::format_status(n), back));
  EXPECT_EQ(back.steps, 12);
  EXPECT_EQ(back.images, 768);
  EXPECT_EQ(back.traffic.bytes_sent, 1000u);
  EXPECT_EQ(back.traffic.bytes_received, 2000u);
  EXPECT_DOUBLE_EQ(back.compute_s, 1.25);
  EXPECT_DOUBLE_EQ(back.exchange_s, 0.5);
  // Half a line (never written: the file is renamed into place) or junk.
  EXPECT_FALSE(train::parse_status("steps=12 images=7", back));
  EXPECT_FALSE(train::parse_status("steps=x images=1 bytes_sent=1 bytes_received=1 compute_s=1 exchange_s=1 wall_s=1",
                                   back));
  EXPECT_EQ(back.steps, 12);
}

TEST(DtrunJobStatus, LineNamesEveryWorkerTheSlowestAndTheRates) {
  const std::vector<train::StatusNumbers> before = {numbers(10, 320, 0, 0, 1, 1), numbers(8, 256, 0, 0, 1, 1)};
  const std::vector<train::StatusNumbers> now = {numbers(20, 640, 2000000, 1000000, 2, 2),
                                                 numbers(12, 384, 0, 0, 2, 2)};
  const std::string line = JobStatus::line(12.4, now, before, 2.0, 1, 0);
  EXPECT_EQ(line,
            "dtrun status at 12 s: worker 0 step 20 160.0 img/s, worker 1 step 12 64.0 img/s; slowest worker 1, 8 "
            "steps behind; in 500.0 kB/s, out 1.00 MB/s; restarts 1, losses 0")
      << line;
  const std::string first = JobStatus::line(1, {numbers(0, 0, 0, 0, 0, 0), numbers(1, 32, 0, 0, 0, 0)}, {}, 1, 0, 0);
  EXPECT_NE(first.find("worker 0 no step yet, worker 1 step 1 32.0 img/s; slowest worker 0, 1 steps behind"),
            std::string::npos)
      << first;
}

TEST(DtrunJobStatus, TableEstimatesTheWaitFromTheLeastExchange) {
  const std::string table = JobStatus::table({numbers(100, 3200, 5000000, 5000000, 10, 3), numbers(100, 3200, 0, 0, 12, 1)});
  EXPECT_NE(table.find("dtrun summary per process"), std::string::npos) << table;
  EXPECT_NE(table.find("worker 0        100       3200     10.000          1.000     2.000        5.000        5.000"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("worker 1        100       3200     12.000          1.000     0.000"), std::string::npos) << table;
  EXPECT_EQ(JobStatus::table({numbers(0, 0, 0, 0, 0, 0)}), "");
}

TEST(DtrunJobStatus, OnByDefaultOnlyOnATerminal) {
  EXPECT_EQ(status_interval(-1, true), 10);
  EXPECT_EQ(status_interval(-1, false), 0);
  EXPECT_EQ(status_interval(0, true), 0);
  EXPECT_EQ(status_interval(2.5, false), 2.5);
}

TEST(DtrunJobStatus, StatusEveryOption) {
  EXPECT_EQ(parse_options({"-n", "2", "--status-every", "1.5", "train"}).status_every_s, 1.5);
  EXPECT_EQ(parse_options({"-n", "2", "--status-every=0", "train"}).status_every_s, 0);
  EXPECT_EQ(parse_options({"-n", "2", "train"}).status_every_s, -1);
  EXPECT_THROW(parse_options({"-n", "2", "--status-every", "-1", "train"}), UsageError);
  const Options ssh = parse_options({"-n", "2", "--launcher", "ssh", "-H", "hosts", "--status-every", "1", "train"});
  ASSERT_FALSE(ssh.notes.empty());
  EXPECT_NE(ssh.notes.back().find("--status-every"), std::string::npos);
}

}  // namespace
}  // namespace dt::dtrun
