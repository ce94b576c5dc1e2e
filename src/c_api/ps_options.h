// dt_kvstore_options <-> dt::ps::PsOptions and dt::ps::JobOverrides, for the
// shims that start nodes (node_api.cc) and distributed kvstores.
#pragma once

#include <cstddef>
#include <string>

#include "core/error.h"
#include "dt_c_api.h"
#include "ps/job_config.h"

namespace dt::c_api {

// The first struct_size this release accepts: the 0.1.0 struct without the
// layout fields. Callers built against that header keep working; the
// fields they do not have take their defaults.
inline constexpr size_t kKvstoreOptionsMinSize = offsetof(dt_kvstore_options, role);

// True when a caller's struct, struct_size bytes long, contains field.
#define DT_OPTIONS_HAS(options, field) \
  ((options)->struct_size >= offsetof(dt_kvstore_options, field) + sizeof((options)->field))

inline void check_kvstore_options_size(const dt_kvstore_options* options) {
  if (options->struct_size < kKvstoreOptionsMinSize || options->struct_size > sizeof(dt_kvstore_options)) {
    throw core::Error(core::ErrorCode::kInvalidArgument,
                      "options->struct_size is " + std::to_string(options->struct_size) + ", expected " +
                          std::to_string(sizeof(dt_kvstore_options)) + " (call dt_kvstore_options_init first)");
  }
}

// NULL: the defaults. A struct_size that no release had is
// Error(kInvalidArgument): the struct was not initialised.
inline ps::PsOptions ps_options_from(const dt_kvstore_options* options) {
  ps::PsOptions out;
  if (options == nullptr) return out;
  check_kvstore_options_size(options);
  out.startup_timeout_s = options->startup_timeout_s;
  out.request_timeout_s = options->request_timeout_s;
  out.heartbeat_interval_s = options->heartbeat_interval_s;
  out.heartbeat_timeout_s = options->heartbeat_timeout_s;
  out.shutdown_timeout_s = options->shutdown_timeout_s;
  out.bigarray_bound_bytes = options->bigarray_bound_bytes;
  out.validate();
  return out;
}

// The layout fields that are set; each wins over the environment. Out of
// range values are Error(kInvalidArgument) naming the field.
inline ps::JobOverrides job_overrides_from(const dt_kvstore_options* options) {
  ps::JobOverrides out;
  if (options == nullptr) return out;
  check_kvstore_options_size(options);
  auto invalid = [](const std::string& what) {
    return core::Error(core::ErrorCode::kInvalidArgument, "options->" + what);
  };
  if (DT_OPTIONS_HAS(options, role) && options->role != -1) {
    if (options->role < DT_ROLE_WORKER || options->role > DT_ROLE_SCHEDULER) {
      throw invalid("role is " + std::to_string(options->role) +
                    ": expected DT_ROLE_WORKER, DT_ROLE_SERVER, DT_ROLE_SCHEDULER or -1 (environment)");
    }
    out.role = static_cast<ps::Role>(options->role);
  }
  if (DT_OPTIONS_HAS(options, worker_id) && options->worker_id != -1) {
    if (options->worker_id < 0) throw invalid("worker_id is " + std::to_string(options->worker_id) + ": expected >= 0 or -1");
    out.worker_id = options->worker_id;
  }
  if (DT_OPTIONS_HAS(options, num_servers) && options->num_servers != 0) {
    if (options->num_servers < 0) throw invalid("num_servers is " + std::to_string(options->num_servers) + ": expected > 0 or 0");
    out.num_servers = options->num_servers;
  }
  if (DT_OPTIONS_HAS(options, num_workers) && options->num_workers != 0) {
    if (options->num_workers < 0) throw invalid("num_workers is " + std::to_string(options->num_workers) + ": expected > 0 or 0");
    out.num_workers = options->num_workers;
  }
  if (DT_OPTIONS_HAS(options, scheduler_host) && options->scheduler_host != nullptr) {
    if (options->scheduler_host[0] == '\0') throw invalid("scheduler_host is empty: expected a host or NULL");
    out.root_uri = std::string(options->scheduler_host);
  }
  if (DT_OPTIONS_HAS(options, scheduler_port) && options->scheduler_port != 0) {
    if (options->scheduler_port < 1 || options->scheduler_port > 65535) {
      throw invalid("scheduler_port is " + std::to_string(options->scheduler_port) + ": expected 1..65535 or 0");
    }
    out.root_port = options->scheduler_port;
  }
  return out;
}

#undef DT_OPTIONS_HAS

}  // namespace dt::c_api
