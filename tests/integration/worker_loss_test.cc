// Issue 19, item 2: DT_WORKER_LOSS=continue. A job of 1 scheduler, 2 servers
// and 3 real worker processes over tcp loopback, where worker 2 leaves
// without a goodbye (its process ends, or it stalls past the heartbeat
// timeout): the other two finish the job with exact results.
//
// Every worker pushes the value (rank + 1) into every element of two keys
// (one of them split across both servers) each round, and the servers run
// sgd with learning rate 1, so after R rounds of which worker 2 took part in
// K, every weight is init - 6 K - 3 (R - K) exactly (dist_sync: the rounds
// after the loss complete with the two workers that remain; dist_async:
// every push applied once).
//
// Every wait has a deadline; the fixture SIGKILLs whatever still runs.
//
// The worker processes: worker_loss/workers.cc; the allreduce jobs' tests:
// worker_loss/allreduce.cc.
#include "worker_loss/worker_loss_job.h"

namespace dt::ps::worker_loss_test {

TEST_F(WorkerLoss, DistSyncFinishesEveryRoundWithTheWorkersThatRemain) {
  job("dist_sync", "exit");
  Child& leaver = children_[5];
  ASSERT_TRUE(wait_exit(leaver, 60s));
  EXPECT_EQ(leaver.status, 0);
  for (size_t i = 0; i < 5; ++i) {
    ASSERT_TRUE(wait_exit(children_[i], 60s)) << "process " << i << " hung after worker 2 left";
    EXPECT_EQ(children_[i].status, 0) << "process " << i << ": " << read_file(children_[i].err);
  }
  expect_weights(0, expected_weight());
  expect_weights(1, expected_weight());
  const std::string scheduler_log = read_file(children_[0].err);
  EXPECT_NE(scheduler_log.find("worker 2"), std::string::npos) << scheduler_log;
  EXPECT_NE(scheduler_log.find("goes on with 2 of 3 workers"), std::string::npos) << scheduler_log;
  EXPECT_NE(scheduler_log.find("data shard of worker 2"), std::string::npos) << scheduler_log;
}

TEST_F(WorkerLoss, DistAsyncGoesOnAtOnce) {
  job("dist_async", "exit");
  for (size_t i = 0; i < children_.size(); ++i) {
    ASSERT_TRUE(wait_exit(children_[i], 60s)) << "process " << i << " hung after worker 2 left";
    EXPECT_EQ(children_[i].status, 0) << "process " << i << ": " << read_file(children_[i].err);
  }
  expect_weights(0, expected_weight());
  expect_weights(1, expected_weight());
}

// Issue 19, item 3: a worker started in the place of a lost one joins the
// running job: the servers' rounds wait for it again from the round it
// joined at, and every weight is exact: worker 2's value counts in its first
// kLeaverRounds rounds and in those from its joining on, no other.
TEST_F(WorkerLoss, AWorkerStartedInTheLostOnesPlaceJoinsTheRunningJob) {
  const int first = round_joined_at(job("dist_sync", "rejoin"), 5);
  ASSERT_GT(first, kLeaverRounds);
  ASSERT_LE(first, kJoinRounds) << "the others finished before it joined: slow them down";
  const float expected = kInit - 3.0f * kJoinRounds - 3.0f * static_cast<float>(kLeaverRounds + kJoinRounds - first + 1);
  expect_weights(0, expected);
  expect_weights(1, expected);
  expect_weights(2, expected);
  const std::string scheduler_log = read_file(children_[0].err);
  EXPECT_NE(scheduler_log.find("joined the running job in the place of worker 2"), std::string::npos) << scheduler_log;
}

// Only a lost worker's place can be taken.
TEST_F(WorkerLoss, AWorkerRegisteringForAPlaceTakenIsRefused) {
  const auto env = job("dist_sync", "rejoin");
  // Once worker 2 left, the job runs; worker 1 is alive: its place is taken.
  ASSERT_TRUE(wait_exit(children_[5], 60s));
  auto worker = env;
  worker["DMLC_ROLE"] = "worker";
  worker["DMLC_WORKER_ID"] = "1";
  worker["DT_TEST_OUT"] = out_prefix() + ".intruder";
  spawn(self_path, {"--loss-worker"}, worker);
  Child& intruder = children_.back();
  ASSERT_TRUE(wait_exit(intruder, 60s));
  EXPECT_NE(intruder.status, 0);
  EXPECT_NE(read_file(intruder.err).find("has not lost worker 1"), std::string::npos) << read_file(intruder.err);
  for (size_t i = 0; i < 5; ++i) {
    ASSERT_TRUE(wait_exit(children_[i], 60s)) << "process " << i;
    EXPECT_EQ(children_[i].status, 0) << "process " << i << ": " << read_file(children_[i].err);
  }
}

// A worker that stalls past the heartbeat timeout is dropped like a dead
// one; when it wakes it must not push into the others' rounds: it fails
// with kPeerLost, naming itself, and the others' results stay exact.
TEST_F(WorkerLoss, AStalledWorkerIsDroppedAndFailsWhenItWakes) {
  job("dist_sync", "stall");
  expect_the_stalled_worker_dropped();
  if (HasFatalFailure()) return;
  expect_weights(0, expected_weight());
  expect_weights(1, expected_weight());
}

}  // namespace dt::ps::worker_loss_test

int main(int argc, char** argv) {
  dt::ps::worker_loss_test::self_path = dt::test::self_executable();
  return dt::test::member_or_tests(argc, argv, "--loss-worker", dt::ps::worker_loss_test::worker_main);
}
