// The environment each process of a job starts with: dtrun's own, then the
// user's --env settings, then the job layout (DMLC_*), which dtrun owns.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "options.h"

namespace dt::dtrun {

using EnvMap = std::map<std::string, std::string>;

enum class Role { kScheduler, kServer, kWorker };
const char* role_name(Role role);  // "scheduler", "server", "worker"

// Where the job's nodes find the scheduler.
struct JobLayout {
  std::string root_uri;  // DMLC_PS_ROOT_URI
  int root_port = 0;     // DMLC_PS_ROOT_PORT; 0 for the scheduler binding a free one
  int num_servers = 0;
  int num_workers = 0;
  std::string port_file;  // DT_PS_PORT_FILE, given to the scheduler only
  std::string interface;  // DMLC_INTERFACE when not empty
  int restart_count = 0;  // DT_RESTART_COUNT: how many times --max-restarts restarted the job
};

// Every process of the job sees how many times dtrun restarted the job
// (0 at first), as torchrun's TORCHELASTIC_RESTART_COUNT: a program may log
// it, or load its checkpoint only when it is not 0.
constexpr const char* kRestartCountVariable = "DT_RESTART_COUNT";

// A worker (or, in a replicated job, a server) that dtrun started again
// alone, to rejoin the running job in the place of its failed self
// (--max-restarts with --worker-loss continue, or --server-replication 1;
// see SupervisorSettings), sees how many times that happened to it in this
// run of the job (1 at its first such restart); unset in every other
// process. A program may log it, or load its checkpoint only when it is set.
// (The name stays the workers' one, which programs already read.)
constexpr const char* kWorkerRestartCountVariable = "DT_WORKER_RESTART_COUNT";

// Where a worker sits among the workers of its host: the GPU a program that
// takes one GPU per worker should use (--gpus local in the examples). Each
// worker sees it as DT_LOCAL_RANK / DT_LOCAL_SIZE and as torchrun's
// LOCAL_RANK / LOCAL_WORLD_SIZE (servers and the scheduler see none).
struct LocalPlace {
  int rank = 0;  // 0 .. size - 1, in worker-rank order
  int size = 1;  // workers on this host
};
constexpr const char* kLocalRankVariable = "DT_LOCAL_RANK";
constexpr const char* kLocalSizeVariable = "DT_LOCAL_SIZE";

// Variables that describe the job layout: dtrun sets them, so --env may not.
bool is_launcher_variable(const std::string& name);

// environ as a map.
EnvMap current_environment();

// Resolves the --env settings in order (--env, then the role's own), bare
// names taking their value from `inherited` (dropped when unset there).
EnvMap user_settings(const EnvMap& inherited, const Options& options, Role role);

// What process `rank` of `role` runs with. Precedence: inherited < --env <
// --env-server / --env-worker < the layout. OMP_WAIT_POLICY=passive is added
// unless set earlier: processes of one job share cores, and OpenMP threads
// that spin while they wait take them from the others. A worker's local
// place is `local`, else (every process on this host) its rank among all
// the job's workers.
EnvMap child_environment(const EnvMap& inherited, const Options& options, const JobLayout& layout, Role role,
                         int rank, std::optional<LocalPlace> local = std::nullopt);

// What a launcher that starts servers and workers itself (srun) runs with:
// as child_environment without the role's variables (DMLC_ROLE,
// DMLC_WORKER_ID, --env-server, --env-worker), which it adds per task.
EnvMap launcher_environment(const EnvMap& inherited, const Options& options, const JobLayout& layout);

// "K=V" strings for execve.
std::vector<std::string> to_envp(const EnvMap& env);

}  // namespace dt::dtrun
