// dt_kvstore_options_init, dt_node_role, dt_node_local_rank, dt_node_run:
// this process's place in a job, and running it as the scheduler or a server.
#include "c_api/api_guard.h"
#include "c_api/handles.h"
#include "c_api/ps_options.h"
#include "dt_c_api.h"
#include "ps/job/job_config.h"
#include "ps/job/local_rank.h"
#include "ps/scheduler/scheduler.h"
#include "ps/server/server_process.h"

using dt::c_api::arg;
using dt::c_api::guarded;
using dt::core::Error;
using dt::core::ErrorCode;

static_assert(static_cast<int>(dt::ps::Role::kWorker) == DT_ROLE_WORKER, "Role matches dt_role");
static_assert(static_cast<int>(dt::ps::Role::kServer) == DT_ROLE_SERVER, "Role matches dt_role");
static_assert(static_cast<int>(dt::ps::Role::kScheduler) == DT_ROLE_SCHEDULER, "Role matches dt_role");

extern "C" {

dt_status dt_kvstore_options_init(dt_kvstore_options* options, size_t struct_size) {
  return guarded(__func__,
                 [&] { dt::c_api::init_struct(options, struct_size, dt::c_api::kvstore_defaults, "options"); });
}

dt_status dt_node_role(dt_role* out) {
  return guarded(__func__, [&] {
    arg(out, "out");
    *out = static_cast<dt_role>(static_cast<int>(dt::ps::role_from_env()));
  });
}

dt_status dt_node_local_rank(int32_t* local_rank, int32_t* local_size) {
  return guarded(__func__, [&] {
    const dt::ps::LocalRank local = dt::ps::local_rank_from_env();
    if (local_rank != nullptr) *local_rank = local.rank;
    if (local_size != nullptr) *local_size = local.size;
  });
}

dt_status dt_node_run(const dt_kvstore_options* options) {
  return guarded(__func__, [&] {
    const dt_kvstore_options o = dt::c_api::kvstore_options_from(options);
    const dt::ps::PsOptions ps_options = dt::c_api::ps_options_from(o);
    const dt::ps::JobConfig job = dt::ps::job_config_from_env(dt::c_api::job_overrides_from(o));
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
