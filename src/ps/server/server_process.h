// A server process's life: listen for workers (tcp, plus ipc for peers on
// the same host, or inproc when the job itself is in-process), register with
// the scheduler, serve the data plane until the job ends.
#pragma once

#include <algorithm>

#include "ps/job/job_config.h"
#include "ps/transport/limits.h"

namespace dt::ps {

// Contexts kept receiving: held requests take others' places at once (see
// RequestServer), so this only sets how many arrive at once, not how many
// may be held.
constexpr int server_receivers(int num_workers) { return std::max(4, std::min(64, 2 * std::max(1, num_workers))); }

// DT_PS_SERVER_MEMORY_LIMIT (bytes, or 512M, 8G) caps what the keys may take
// on this server (see ServerKeyStore); unset, the limit is automatic. The
// ipc socket file is removed when the server ends, and files of servers
// killed earlier on this host are removed when the next one starts.
// Returns when the scheduler says the job is over. Throws Error(kPeerLost)
// naming the lost node when a node dies (pending requests are answered with
// the same error first), kTimedOut when the scheduler is unreachable within
// startup_timeout_s, kNetwork when listening fails.
void run_server(const JobConfig& job, const PsOptions& options);

}  // namespace dt::ps
