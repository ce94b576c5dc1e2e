// A node's view of the job: its role and the job layout (from explicit
// options, the MXNet-compatible DMLC_* environment or another launcher's
// variables: see ps/job/launcher_environment.h), and the deadlines/bounds every
// wait uses.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "net/transport_security.h"
#include "ops/cpu/reduction_pool.h"
#include "ps/transport/request_client.h"

namespace dt::ps {

// Values equal dt_role and wire::Role.
enum class Role : int { kWorker = 0, kServer = 1, kScheduler = 2 };
const char* role_name(Role role);  // "worker", "server", "scheduler"

// What a job does when it loses a worker (DT_WORKER_LOSS). kFail: the job
// ends, every node naming the lost one (MXNet's and ps-lite's behaviour).
// kContinue: the scheduler drops the worker and the others go on (issue 19):
// dist_async at once; dist_sync finishes each round with the workers that
// remain (docs/fault-tolerance.md). Servers lost always end the job.
enum class WorkerLossPolicy { kFail, kContinue };

// Mirrors dt_kvstore_options (src/c_api/ps_options.h converts), plus the
// transport bound that the C struct does not expose.
struct PsOptions {
  double startup_timeout_s = 60;
  double request_timeout_s = 120;
  double heartbeat_interval_s = 1;
  double heartbeat_timeout_s = 5;
  double shutdown_timeout_s = 10;
  uint64_t bigarray_bound_bytes = 4000000;
  // > 0 (PS_RESEND=1, PS_RESEND_TIMEOUT ms): a worker's push, pull or init
  // without a reply this long is sent again; servers answer a repeat without
  // counting it twice. 0: never resent (the default, as ps-lite's).
  double resend_timeout_s = 0;
  // Decided by the scheduler's value; from the environment only, as
  // PS_RESEND (no kvstore option field).
  WorkerLossPolicy worker_loss = WorkerLossPolicy::kFail;
  // DT_SERVER_REPLICATION (0 or 1; environment only, as worker_loss): 1
  // keeps every key part on a second server too, its replica, so that a
  // lost server is not the job's end (docs/fault-tolerance.md). The
  // scheduler's value decides whether a lost server departs or fails the
  // job; the workers' whether they push to replicas.
  int server_replicas = 0;
  // MXNET_KVSTORE_REDUCTION_NTHREADS (environment only, as MXNet): the
  // threads that sum an array of at least bigarray_bound_bytes, on a
  // server's rounds and in a worker's merge of a key's values
  // (ops/cpu/reduction_pool.h); 1 to 256.
  int reduction_threads = 4;
  // DT_STALL_WARNING_S (environment only): a dist_sync round, a request or a
  // barrier waiting this long is logged once by the stall inspector
  // (core/stall_watch.h), naming whom it waits for; 0 turns it off.
  double stall_warning_s = 60;
  // reduction_threads from the bigarray bound on, as a ReductionPool takes them.
  ops::cpu::ReductionSettings reduction() const {
    return {reduction_threads, static_cast<size_t>(bigarray_bound_bytes)};
  }
  // NNG_OPT_RECVMAXSZ on every socket: nng drops a larger message and its
  // connection without notice to the receiver (the requester fails with
  // kNetwork or kTimedOut), so the data plane must chunk tensors below it.
  size_t max_message_bytes = kDefaultMaxMessageBytes;

  // Error(kInvalidArgument) naming the field for non-positive or non-finite
  // times, a heartbeat timeout not above the interval, a zero bound, or
  // reduction threads outside 1..256.
  void validate() const;
};

// Seconds as a deadline for the transport (at least 1 ms).
std::chrono::milliseconds to_ms(double seconds);
// "5.0 s"
std::string seconds_text(double seconds);

struct JobConfig {
  Role role = Role::kWorker;
  // Where nodes reach the scheduler: "tcp://<resolved DMLC_PS_ROOT_URI>:<port>",
  // or DT_PS_ROOT_URL verbatim (inproc:// or ipc:// in tests).
  std::string root_url;
  // What the scheduler listens on: "tcp://<DMLC_PS_ROOT_URI's address>:<port>"
  // when that address is this host's, else "tcp://<node_host>:<port>";
  // "tcp://0.0.0.0:<port>" only with DT_PS_LISTEN_ALL=1; or DT_PS_ROOT_URL.
  // Both are tls+tcp:// instead of tcp:// when the job has TLS files.
  std::string scheduler_listen_url;
  int num_servers = 0;
  int num_workers = 0;
  int worker_id = -1;  // DMLC_WORKER_ID; -1 when unset
  // This node's address as peers reach it: DMLC_NODE_HOST, else the IPv4
  // address of DMLC_INTERFACE, else 127.0.0.1 when the scheduler is on
  // loopback, else the first non-loopback IPv4 interface.
  std::string node_host;
  // DT_PS_PORT_FILE: the scheduler writes its bound port there (port 0).
  std::string port_file;
  // Where the role and layout came from, e.g. "job layout from
  // OMPI_COMM_WORLD_* (rank 3 of 4, 1 server + 3 workers): worker 2".
  std::string layout_summary;
  // The job's secret and TLS files (ps/job/security_environment.h): every
  // connection this node opens or accepts uses them.
  net::TransportSecurity security;
};

// Values a program sets itself (explicit API options). Each wins over every
// environment variable; unset fields fall through to the environment.
struct JobOverrides {
  std::optional<Role> role;
  std::optional<int> worker_id;
  std::optional<int> num_servers;
  std::optional<int> num_workers;
  std::optional<std::string> root_uri;
  std::optional<int> root_port;
  // The node's TLS files instead of DT_TLS_* (all three set).
  std::optional<net::TlsFiles> tls;
};

// Reads a variable: nullopt when unset. Tests pass a map instead of getenv.
using EnvLookup = std::function<std::optional<std::string>(const char* name)>;

// This process's role by the order of ps/job/launcher_environment.h (worker when
// no source names one); Error(kInvalidArgument) naming the variable for an
// unknown DMLC_ROLE, a malformed MX_CONFIG or rank counts that do not fit.
Role role_from(const EnvLookup& env);
Role role_from_env();

// Missing or invalid values are Error(kInvalidArgument) naming the variable;
// an unresolvable scheduler host or interface without IPv4 address too.
JobConfig job_config_from(const EnvLookup& env, const JobOverrides& overrides = {});
// As job_config_from over getenv; the first call in a process also writes
// layout_summary to stderr ("disttrain: job layout from ..."), so that every
// process of a job says once how it found its role.
JobConfig job_config_from_env(const JobOverrides& overrides = {});

}  // namespace dt::ps
