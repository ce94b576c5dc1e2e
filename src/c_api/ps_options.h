// dt_kvstore_options <-> dt::ps::PsOptions, for the shims that start nodes
// (node_api.cc) and distributed kvstores.
#pragma once

#include <cstddef>

#include "core/error.h"
#include "dt_c_api.h"
#include "ps/job_config.h"

namespace dt::c_api {

// NULL: the defaults. A struct_size smaller than this release's struct (an
// older caller) is Error(kInvalidArgument): no field has a safe guess.
inline ps::PsOptions ps_options_from(const dt_kvstore_options* options) {
  ps::PsOptions out;
  if (options == nullptr) return out;
  if (options->struct_size < sizeof(dt_kvstore_options)) {
    throw core::Error(core::ErrorCode::kInvalidArgument,
                      "options->struct_size is " + std::to_string(options->struct_size) + ", expected " +
                          std::to_string(sizeof(dt_kvstore_options)) + " (call dt_kvstore_options_init first)");
  }
  out.startup_timeout_s = options->startup_timeout_s;
  out.request_timeout_s = options->request_timeout_s;
  out.heartbeat_interval_s = options->heartbeat_interval_s;
  out.heartbeat_timeout_s = options->heartbeat_timeout_s;
  out.shutdown_timeout_s = options->shutdown_timeout_s;
  out.bigarray_bound_bytes = options->bigarray_bound_bytes;
  out.validate();
  return out;
}

}  // namespace dt::c_api
