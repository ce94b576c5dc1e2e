// The job's scheduler: takes registrations, assigns ranks, publishes the node
// table, runs worker barriers, watches heartbeats and connections, and tells
// every node about lost nodes and about the clean end of the job. Inside: a
// member table (member_table.h) and a barrier book (barrier_book.h) on the
// plain path, with worker departures and joins (worker_roster.h) and server
// recovery (server_recovery.h) as companions. The transport's threads serve
// the messages under one mutex; run() watches the deadlines on its caller's.
#pragma once

#include <memory>
#include <string>

#include "ps/job/job_config.h"

namespace dt::ps {

class Scheduler {
 public:
  // Listens on job.scheduler_listen_url (writing the bound port to
  // job.port_file when set). Error(kNetwork) "... address in use" for a taken
  // port; kInvalidArgument for bad options.
  Scheduler(const JobConfig& job, const PsOptions& options);
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // The URL nodes can dial (port 0 replaced by the real one).
  std::string url() const;

  // Runs the job to its end. Returns after every worker sent Shutdown and the
  // servers were told to stop (or shutdown_timeout_s passed). Throws
  // Error(kPeerLost) naming the first lost node once the other nodes were
  // told (or a grace period passed), Error(kTimedOut) when not every node
  // registered within startup_timeout_s, Error(kInvalidArgument) when a
  // node's job layout contradicts the scheduler's.
  void run();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace dt::ps
