// A server process's life: listen for workers (tcp, plus ipc for peers on
// the same host, or inproc when the job itself is in-process), register with
// the scheduler, serve the data plane until the job ends.
#pragma once

#include <algorithm>

#include "ps/job/job_config.h"

namespace dt::ps {

// Messages a worker keeps in flight to one server in each of its two lanes
// (pushes; pulls): enough to pipeline 4 MiB parts.
constexpr int kLaneWindow = 4;

// Requests a server handles at once: every message the workers may have in
// flight to it, plus one command each (set_optimizer, optimizer_state). A
// dist_sync pull holds its slot until its round completes; were there fewer
// slots than messages in flight, the pushes that complete a round could not
// get in and the job would wait for its deadline. A slot is an nng context:
// a few hundred bytes.
constexpr int server_concurrency(int num_workers) {
  return std::max(16, std::max(1, num_workers) * (2 * kLaneWindow + 1));
}

// Returns when the scheduler says the job is over. Throws Error(kPeerLost)
// naming the lost node when a node dies (pending requests are answered with
// the same error first), kTimedOut when the scheduler is unreachable within
// startup_timeout_s, kNetwork when listening fails.
void run_server(const JobConfig& job, const PsOptions& options);

}  // namespace dt::ps
