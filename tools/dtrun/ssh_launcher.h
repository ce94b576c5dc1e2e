// --launcher ssh -H HOSTFILE: the scheduler runs here under dtrun (as
// launch.py runs it on the launching host), binding port 0 and reporting its
// port through the port file; server i and worker i run on the hosts of the
// hostfile (see hostfile.h), each through its own `ssh` process, which dtrun
// supervises like a local process: its output is prefixed with the remote
// process's role and rank, and its exit status is the remote process's.
//
// DMLC_PS_ROOT_URI is the address of --interface here, else the source
// address of this host's route to the first host: an address that host can
// reach, even when this host has several.
//
// ssh runs with BatchMode=yes (never a prompt; keys or an agent only, no
// credential on any command line), the user's --ssh-config and --ssh-option,
// then dtrun's defaults (see ssh_base_argv). The remote processes get only
// the job's DMLC_* variables, the variables launch.py forwards from its own
// environment (kForwardedVariables) and the --env settings, set through
// env(1) on the remote side (remote_command.h), and run in --sync-dst-dir,
// else in the directory dtrun was started from, as launch.py does.
//
// Stopping: ssh's stdin is a FIFO that only dtrun holds open for writing.
// When the job stops, dtrun closes it, each ssh passes the end-of-file on,
// and the remote wrapper ends the process group of its command; dtrun waits
// (bounded) for the ssh processes to report that before it kills anything
// locally. When dtrun dies instead, its ssh processes die with it
// (PR_SET_PDEATHSIG), their connections close, and the remote sides see the
// same end-of-file.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "hostfile.h"
#include "job.h"
#include "signal_pipe.h"

namespace dt::dtrun {

// How long the remote sides may take to end their processes after dtrun
// closed the ssh sessions' stdin (the wrapper's SIGKILL comes after 5 s).
constexpr double kRemoteStopS = 10;

// "ssh -o BatchMode=yes [-F CONFIG] [-o OPT]... -o <defaults>... -T -x [-p PORT]":
// ssh keeps the first value it gets for an option, so --ssh-option overrides
// the defaults (StrictHostKeyChecking=accept-new, ConnectTimeout=20,
// ServerAliveInterval=5, ServerAliveCountMax=3), and both override the
// config files; BatchMode=yes comes first and cannot be overridden.
std::vector<std::string> ssh_base_argv(const Options& options, const SshHost& host);

// ssh_base_argv + destination + the remote command line.
std::vector<std::string> ssh_argv(const Options& options, const SshHost& host, const std::string& remote_command);

// rsync -az of local_dir's contents into remote_dir on host (created with its
// parents), over ssh with the same arguments as the job's sessions.
std::vector<std::string> rsync_argv(const Options& options, const SshHost& host, const std::string& local_dir,
                                    const std::string& remote_dir);

// What dmlc-tracker's ssh launcher copies from its own environment to every
// remote process, when set. Not its AWS_ACCESS_KEY_ID and
// AWS_SECRET_ACCESS_KEY: they would travel on the ssh command line, which
// every user of both hosts can read in ps.
constexpr const char* kForwardedVariables[] = {"DMLC_INTERFACE", "KMP_AFFINITY", "LD_LIBRARY_PATH",
                                               "OMP_NUM_THREADS"};

// What a remote process runs with: the --env settings of its role, the job's
// DMLC_* variables, DT_RESTART_COUNT, a worker's local place (`local`, see
// worker_local_place) and kForwardedVariables (from dtrun's environment
// unless --env or --interface set them); nothing else of dtrun's environment.
EnvMap remote_environment(const EnvMap& inherited, const Options& options, const JobLayout& layout, Role role,
                          int rank, std::optional<LocalPlace> local = std::nullopt);

// The source address of this host's route to `host` (IPv4). Throws
// std::runtime_error when host does not resolve or is unreachable.
std::string route_address(const std::string& host);

// A process started through ssh, for messages.
struct RemoteProcess {
  std::string name;  // "worker 1"
  std::string host;  // SshHost::text()
};

// Rewrites the supervisor's account of an ssh process that ended ("worker 1
// exited with status 137") into the remote process's ("worker 1 on HOST
// killed by signal 9 (Killed)"): the remote shell reports a command killed by
// signal N as status 128+N, and ssh reports 255 for a failed or lost
// connection. Other outcomes pass unchanged.
Outcome describe_remote_outcome(const Outcome& outcome, const std::vector<RemoteProcess>& remote);

// signals and settings serve the supervisor of the --sync-dst-dir copies,
// which run before the job's own processes.
Outcome run_ssh(Supervisor& supervisor, const JobContext& job, SignalPipe& signals,
                const SupervisorSettings& settings);

}  // namespace dt::dtrun
