// dtrun's command line, with the meanings of MXNet's tools/launch.py where
// the two overlap (-n, -s, --launcher, --env-server, --env-worker, --env).
#pragma once

#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace dt::dtrun {

enum class Launcher { kLocal, kSlurm, kSsh, kMpi };

// One --env/--env-server/--env-worker value. launch.py's forms are kept:
// "K=V" and "K:V" set K; a bare "K" passes this shell's value of K on.
struct EnvSetting {
  std::string name;
  std::string value;
  bool from_caller = false;  // bare "K": value comes from dtrun's environment
};

struct Options {
  int num_workers = 0;
  int num_servers = 0;  // -s; equals num_workers when not given
  Launcher launcher = Launcher::kLocal;
  std::vector<EnvSetting> env;         // every process
  std::vector<EnvSetting> env_server;  // scheduler and servers (the dt-node processes)
  std::vector<EnvSetting> env_worker;  // workers
  std::string interface;               // DMLC_INTERFACE for every process
  std::string log_dir;                 // one <role>-<rank>.log per process
  std::string timeline;                // --timeline: the merged timeline's file (absolute)
  double timeout_s = 0;                // 0: no limit
  // --status-every S: the live job summary's interval (job_status.h); 0 off,
  // -1 not given (on when stdout is a terminal).
  double status_every_s = -1;
  bool tls = false;                    // --tls: a throw-away CA and certificate for the job (job_tls.h)
  // --worker-loss: "fail" or "continue" (DT_WORKER_LOSS for every process);
  // empty when not given.
  std::string worker_loss;
  // --server-replication: "0" or "1" (DT_SERVER_REPLICATION for every
  // process); empty when not given.
  std::string server_replication;
  // --max-restarts: how many times a failed job is started again, whole, or
  // (--worker-loss continue, local and ssh) a failed worker alone.
  int max_restarts = 0;
  std::string hostfile;                // -H: the hosts of --launcher ssh (hostfile.h)
  std::string sync_dst_dir;            // --sync-dst-dir: rsync the working directory there first (ssh only)
  std::string ssh_config;              // --ssh-config: ssh -F FILE
  std::vector<std::string> ssh_options;  // --ssh-option: ssh -o OPTION, in order
  bool help = false;
  // The worker command: from the first word that is not an option, or after
  // "--". One argument that holds whitespace is a
  // command line, as launch.py users quote it ("python train.py --lr 0.1"):
  // it becomes {"/bin/sh", "-c", ARG}.
  std::vector<std::string> command;
  std::vector<std::string> notes;      // for stderr: options accepted but ignored, and why
};

// A command line dtrun cannot run; what() is the message for the user.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// args excludes argv[0]. Throws UsageError.
Options parse_options(const std::vector<std::string>& args);

const char* usage_text();

// Whether the job goes on when a worker fails: DT_WORKER_LOSS=continue as
// the processes will see it (--worker-loss, else the last --env setting of
// it, else dtrun's own environment, inherited).
bool continues_after_worker_loss(const Options& options, const std::map<std::string, std::string>& inherited);

// How many failed servers the job may go on without: with
// DT_SERVER_REPLICATION=1 as the processes will see it (--server-replication,
// else the last --env setting of it, else dtrun's own environment,
// inherited) all servers but one (at least 1), since every key part then has
// two holders and gets a new copy after a loss while two servers are left
// (the scheduler weighs each loss and ends the job when a part would have
// no holder left); else 0.
int tolerated_server_losses(const Options& options, const std::map<std::string, std::string>& inherited);

}  // namespace dt::dtrun
