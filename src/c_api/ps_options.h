// dt_kvstore_options <-> dt::ps::PsOptions and dt::ps::JobOverrides, for the
// shims that start nodes (node_api.cc) and distributed kvstores.
#pragma once

#include <string>

#include "c_api/options.h"
#include "core/error.h"
#include "dt_c_api.h"
#include "ps/job/environment_options.h"
#include "ps/job/job_config.h"

namespace dt::c_api {

// dt_kvstore_options' defaults, for dt_kvstore_options_init and read_struct.
// The deadlines and bounds come from the environment (DT_*_TIMEOUT_S,
// DT_BIGARRAY_BOUND_BYTES, MXNET_KVSTORE_BIGARRAY_BOUND: see
// ps/job/environment_options.h), so every node of a job, however started,
// takes the job's settings; Error(kInvalidArgument) for a malformed one.
inline void kvstore_defaults(dt_kvstore_options* options) {
  const ps::PsOptions defaults = ps::ps_options_from_environment();
  options->startup_timeout_s = defaults.startup_timeout_s;
  options->request_timeout_s = defaults.request_timeout_s;
  options->heartbeat_interval_s = defaults.heartbeat_interval_s;
  options->heartbeat_timeout_s = defaults.heartbeat_timeout_s;
  options->shutdown_timeout_s = defaults.shutdown_timeout_s;
  options->bigarray_bound_bytes = defaults.bigarray_bound_bytes;
  // The layout: every field "not set", so the environment decides.
  options->role = -1;
  options->worker_id = -1;
  options->num_servers = 0;
  options->num_workers = 0;
  options->scheduler_host = nullptr;
  options->scheduler_port = 0;
  options->tls_cert_file = nullptr;
  options->tls_key_file = nullptr;
  options->tls_ca_file = nullptr;
}

// A caller's options (NULL: the defaults) as read_struct merges them.
inline dt_kvstore_options kvstore_options_from(const dt_kvstore_options* options) {
  return read_struct(options, kvstore_defaults, "options");
}

// The deadlines and bounds; Error(kInvalidArgument) for one out of range.
inline ps::PsOptions ps_options_from(const dt_kvstore_options& options) {
  ps::PsOptions out;
  out.startup_timeout_s = options.startup_timeout_s;
  out.request_timeout_s = options.request_timeout_s;
  out.heartbeat_interval_s = options.heartbeat_interval_s;
  out.heartbeat_timeout_s = options.heartbeat_timeout_s;
  out.shutdown_timeout_s = options.shutdown_timeout_s;
  out.bigarray_bound_bytes = options.bigarray_bound_bytes;
  // ps-lite's knob, the worker-loss policy, MXNet's reduction threads and
  // the stall inspector's threshold, from the environment only (no field:
  // MXNet has none either).
  const ps::PsOptions from_environment = ps::ps_options_from_environment();
  out.resend_timeout_s = from_environment.resend_timeout_s;
  out.worker_loss = from_environment.worker_loss;
  out.server_replicas = from_environment.server_replicas;
  out.reduction_threads = from_environment.reduction_threads;
  out.stall_warning_s = from_environment.stall_warning_s;
  out.validate();
  return out;
}

// The layout fields that are set; each wins over the environment. Out of
// range values are Error(kInvalidArgument) naming the field.
inline ps::JobOverrides job_overrides_from(const dt_kvstore_options& options) {
  ps::JobOverrides out;
  auto invalid = [](const std::string& what) {
    return core::Error(core::ErrorCode::kInvalidArgument, "options->" + what);
  };
  if (options.role != -1) {
    if (options.role < DT_ROLE_WORKER || options.role > DT_ROLE_SCHEDULER) {
      throw invalid("role is " + std::to_string(options.role) +
                    ": expected DT_ROLE_WORKER, DT_ROLE_SERVER, DT_ROLE_SCHEDULER or -1 (environment)");
    }
    out.role = static_cast<ps::Role>(options.role);
  }
  if (options.worker_id != -1) {
    if (options.worker_id < 0) throw invalid("worker_id is " + std::to_string(options.worker_id) + ": expected >= 0 or -1");
    out.worker_id = options.worker_id;
  }
  if (options.num_servers != 0) {
    if (options.num_servers < 0) throw invalid("num_servers is " + std::to_string(options.num_servers) + ": expected > 0 or 0");
    out.num_servers = options.num_servers;
  }
  if (options.num_workers != 0) {
    if (options.num_workers < 0) throw invalid("num_workers is " + std::to_string(options.num_workers) + ": expected > 0 or 0");
    out.num_workers = options.num_workers;
  }
  if (options.scheduler_host != nullptr) {
    if (options.scheduler_host[0] == '\0') throw invalid("scheduler_host is empty: expected a host or NULL");
    out.root_uri = std::string(options.scheduler_host);
  }
  if (options.scheduler_port != 0) {
    if (options.scheduler_port < 1 || options.scheduler_port > 65535) {
      throw invalid("scheduler_port is " + std::to_string(options.scheduler_port) + ": expected 1..65535 or 0");
    }
    out.root_port = options.scheduler_port;
  }
  // Any of the three set: the three replace DT_TLS_* (job_config_from checks
  // that all are there and readable).
  if (options.tls_cert_file != nullptr || options.tls_key_file != nullptr || options.tls_ca_file != nullptr) {
    const auto text = [](const char* s) { return s == nullptr ? std::string() : std::string(s); };
    out.tls = net::TlsFiles{text(options.tls_cert_file), text(options.tls_key_file), text(options.tls_ca_file)};
  }
  return out;
}

}  // namespace dt::c_api
