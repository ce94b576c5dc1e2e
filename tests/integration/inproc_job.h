// A parameter-server job of threads over inproc://: each node's JobConfig
// and deadlines short enough for tests, shared by the integration tests
// that run scheduler, servers and workers in one process.
#pragma once

#include <cstdint>
#include <string>

#include "ps/job/job_config.h"

namespace dt::test {

inline ps::JobConfig inproc_job(const std::string& url, ps::Role role, int servers, int workers,
                                int worker_id = -1) {
  ps::JobConfig job;
  job.role = role;
  job.root_url = job.scheduler_listen_url = url;
  job.num_servers = servers;
  job.num_workers = workers;
  job.worker_id = worker_id;
  job.node_host = "127.0.0.1";
  return job;
}

// Heartbeats every 0.1 s, a node lost after 1 s; every other wait 5-10 s.
inline ps::PsOptions fast_options(uint64_t bigarray_bound_bytes = ps::PsOptions{}.bigarray_bound_bytes) {
  ps::PsOptions o;
  o.startup_timeout_s = 10;
  o.request_timeout_s = 10;
  o.heartbeat_interval_s = 0.1;
  o.heartbeat_timeout_s = 1;
  o.shutdown_timeout_s = 5;
  o.bigarray_bound_bytes = bigarray_bound_bytes;
  return o;
}

}  // namespace dt::test
