// A server process's life: listen for workers (tcp, plus ipc for peers on
// the same host, or inproc when the job itself is in-process), register with
// the scheduler, serve the data plane until the job ends.
#pragma once

#include "ps/job_config.h"

namespace dt::ps {

// Requests a server handles at once. A dist_sync pull holds its slot until
// the round completes, so workers together must keep fewer requests in
// flight per server than this, or the pushes that would complete a round
// cannot get in: the worker's in-flight window is derived from it.
constexpr int kServerConcurrency = 16;

// Returns when the scheduler says the job is over. Throws Error(kPeerLost)
// naming the lost node when a node dies (pending requests are answered with
// the same error first), kTimedOut when the scheduler is unreachable within
// startup_timeout_s, kNetwork when listening fails.
void run_server(const JobConfig& job, const PsOptions& options);

}  // namespace dt::ps
