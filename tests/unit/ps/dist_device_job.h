// A parameter-server job whose scheduler and servers run on threads of the
// test process over inproc://, for tests of kvstores that join a job as its
// workers (the workers are the test's own threads). The destructor waits
// for the nodes, bounded.
#pragma once

#include <chrono>
#include <future>
#include <string>
#include <vector>

#include "integration/inproc_job.h"
#include "ps/job/job_config.h"
#include "ps/scheduler/scheduler.h"
#include "ps/server/server_process.h"
#include "unit/ps/ps_test_util.h"

namespace dt::test {

class ThreadedJob {
 public:
  ThreadedJob(int servers, int workers, ps::PsOptions options = fast_options())
      : url_(ps::test::unique_url("inproc")), servers_(servers), workers_(workers), options_(options),
        scheduler_(inproc_job(url_, ps::Role::kScheduler, servers, workers), options) {
    nodes_.push_back(std::async(std::launch::async, [this] { scheduler_.run(); }));
    for (int s = 0; s < servers; ++s) {
      nodes_.push_back(std::async(std::launch::async, [this] {
        ps::run_server(inproc_job(url_, ps::Role::kServer, servers_, workers_), options_);
      }));
    }
  }
  ~ThreadedJob() {
    for (auto& node : nodes_) node.wait_for(std::chrono::seconds(20));
  }
  ThreadedJob(const ThreadedJob&) = delete;
  ThreadedJob& operator=(const ThreadedJob&) = delete;

  // The JobConfig of worker `rank`.
  ps::JobConfig worker(int rank) const { return inproc_job(url_, ps::Role::kWorker, servers_, workers_, rank); }
  const ps::PsOptions& options() const { return options_; }

  // Every node's outcome once the job ended: "" for a clean end, "hung", or
  // the error text.
  std::vector<std::string> outcomes() {
    std::vector<std::string> out;
    for (auto& node : nodes_) {
      if (node.wait_for(std::chrono::seconds(20)) != std::future_status::ready) {
        out.push_back("hung");
        continue;
      }
      try {
        node.get();
        out.push_back("");
      } catch (const std::exception& e) {
        out.push_back(e.what());
      }
    }
    nodes_.clear();
    return out;
  }

 private:
  std::string url_;
  int servers_, workers_;
  ps::PsOptions options_;
  ps::Scheduler scheduler_;
  std::vector<std::future<void>> nodes_;
};

}  // namespace dt::test
