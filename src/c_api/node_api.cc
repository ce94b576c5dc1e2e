// dt_kvstore_options_init, dt_node_role, dt_node_run: running this process as
// the scheduler or a server of a parameter-server job.
#include "c_api/api_guard.h"
#include "c_api/handles.h"
#include "c_api/ps_options.h"
#include "dt_c_api.h"
#include "ps/job_config.h"
#include "ps/scheduler.h"
#include "ps/server_node.h"

using dt::c_api::arg;
using dt::c_api::guarded;
using dt::core::Error;
using dt::core::ErrorCode;

static_assert(static_cast<int>(dt::ps::Role::kWorker) == DT_ROLE_WORKER, "Role matches dt_role");
static_assert(static_cast<int>(dt::ps::Role::kServer) == DT_ROLE_SERVER, "Role matches dt_role");
static_assert(static_cast<int>(dt::ps::Role::kScheduler) == DT_ROLE_SCHEDULER, "Role matches dt_role");

extern "C" {

void dt_kvstore_options_init(dt_kvstore_options* options) {
  if (options == nullptr) return;
  const dt::ps::PsOptions defaults;
  options->struct_size = sizeof(dt_kvstore_options);
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
}

dt_status dt_node_role(dt_role* out) {
  return guarded(__func__, [&] {
    arg(out, "out");
    *out = static_cast<dt_role>(static_cast<int>(dt::ps::role_from_env()));
  });
}

dt_status dt_node_run(const dt_kvstore_options* options) {
  return guarded(__func__, [&] {
    const dt::ps::PsOptions ps_options = dt::c_api::ps_options_from(options);
    const dt::ps::JobConfig job = dt::ps::job_config_from_env(dt::c_api::job_overrides_from(options));
    switch (job.role) {
      case dt::ps::Role::kScheduler: {
        dt::ps::Scheduler scheduler(job, ps_options);
        scheduler.run();
        break;
      }
      case dt::ps::Role::kServer:
        dt::ps::run_server(job, ps_options);
        break;
      case dt::ps::Role::kWorker:
        throw Error(ErrorCode::kInvalidArgument,
                    "this process's role is worker: workers join the job through dt_kvstore_create(\"dist_sync\"|\"dist_async\")");
    }
  });
}

}  // extern "C"
