// A server process's life: listen for workers (tcp, plus ipc for peers on
// the same host, or inproc when the job itself is in-process), register with
// the scheduler, serve the data plane until the job ends.
#pragma once

#include "ps/job_config.h"

namespace dt::ps {

// Returns when the scheduler says the job is over. Throws Error(kPeerLost)
// naming the lost node when a node dies (pending requests are answered with
// the same error first), kTimedOut when the scheduler is unreachable within
// startup_timeout_s, kNetwork when listening fails.
void run_server(const JobConfig& job, const PsOptions& options);

}  // namespace dt::ps
