// dt-node: runs this process as the scheduler or a server of a disttrain
// parameter-server job, or, under a launcher that gives every process the
// same program and only a rank (mpirun, srun, PMI), as whatever the rank
// rule makes it:
//
//   dt-node [--env-server K=V]... [--env-worker K=V]...
//           [--tls-cert FILE --tls-key FILE --tls-ca FILE] [-- COMMAND [ARGS...]]
//   dt-node --help-env[=markdown]
//
// The role comes from dt_node_role: DMLC_ROLE, else MX_CONFIG, else a rank
// (RANK, OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID: ranks 0..S-1 are
// servers, the rest workers; see docs/launching.md). A scheduler or server
// runs here; a worker execs COMMAND, which finds the same role and worker id
// when it creates its dist kvstore. --env-server / --env-worker set
// variables for that role only, as dtrun's flags of the same names do.
// --tls-cert/--tls-key/--tls-ca (all three) put the job's tcp connections on
// TLS (docs/security.md, "TLS"), as DT_TLS_CERT_FILE, DT_TLS_KEY_FILE and
// DT_TLS_CA_FILE do; a worker's COMMAND gets them as those variables.
//
// DTRUN_DIE_WITH_LAUNCHER=1 (set by dtrun --launcher mpi): this process,
// and the worker it execs, get SIGKILL when the parent that started it
// (mpirun, or Open MPI's daemon on another host) dies, so that killing
// mpirun can never leave a rank behind. Open MPI puts every rank in a
// process group of its own, out of reach of dtrun's group; joining dtrun's
// group instead is no cure, since mpirun then signals that whole group when
// it ends one rank.
//
// --help-env prints every environment variable the library reads, with its
// type, default and meaning (src/core/parameter_table.cc, compiled in here
// too); --help-env=markdown prints docs/environment.md.
//
// A server tunes glibc's malloc for itself, before any thread starts:
// received messages are fresh allocations, and mapping, unmapping and
// trimming them each time makes page faults dominate large transfers. The
// library leaves process-wide malloc settings to the program (a JVM or Go
// service that embeds a server decides for itself), so this is dt-node's
// choice, not the library's.
//
// Deadlines come from dt_kvstore_options_init, which reads DT_STARTUP_TIMEOUT_S,
// DT_REQUEST_TIMEOUT_S, DT_HEARTBEAT_INTERVAL_S, DT_HEARTBEAT_TIMEOUT_S,
// DT_SHUTDOWN_TIMEOUT_S (seconds), DT_BIGARRAY_BOUND_BYTES and MXNet's
// MXNET_KVSTORE_BIGARRAY_BOUND (elements) for every node of a job alike.
//
// Exit code: 0 after a clean shutdown; 1 when the job fails (the reason on
// stderr: a lost peer, a port in use, an unreachable scheduler); 2 for a bad
// command line or environment; 127 when COMMAND cannot be run.
#include <errno.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "core/parameter_table.h"
#include "dt_c_api.h"

namespace {

struct Args {
  std::vector<std::string> env_server;  // "K=V"
  std::vector<std::string> env_worker;
  std::vector<std::string> command;     // after "--"
  std::string tls_cert, tls_key, tls_ca;  // --tls-*; empty: DT_TLS_* decide
};

const char kUsage[] =
    "usage: dt-node [--env-server K=V]... [--env-worker K=V]...\n"
    "               [--tls-cert FILE --tls-key FILE --tls-ca FILE] [-- COMMAND [ARGS...]]\n"
    "       dt-node --help-env[=markdown]\n";

// Returns false (after a message) for a command line dt-node cannot run.
bool parse_args(int argc, char** argv, Args* out) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--") {
      out->command.assign(argv + i + 1, argv + argc);
      if (out->command.empty()) {
        fprintf(stderr, "dt-node: no command after \"--\"\n%s", kUsage);
        return false;
      }
      return true;
    }
    std::string* file = a == "--tls-cert" ? &out->tls_cert
                        : a == "--tls-key"  ? &out->tls_key
                        : a == "--tls-ca"   ? &out->tls_ca
                                            : nullptr;
    if (file != nullptr) {
      if (i + 1 >= argc || argv[i + 1][0] == '\0') {
        fprintf(stderr, "dt-node: %s needs a file\n%s", a.c_str(), kUsage);
        return false;
      }
      *file = argv[++i];
      continue;
    }
    std::vector<std::string>* list = a == "--env-server" ? &out->env_server
                                     : a == "--env-worker" ? &out->env_worker
                                                           : nullptr;
    if (list == nullptr) {
      fprintf(stderr, "dt-node: unknown argument \"%s\"\n%s", a.c_str(), kUsage);
      return false;
    }
    if (i + 1 >= argc || strchr(argv[i + 1], '=') == NULL || argv[i + 1][0] == '=') {
      fprintf(stderr, "dt-node: %s needs NAME=VALUE\n%s", a.c_str(), kUsage);
      return false;
    }
    list->push_back(argv[++i]);
  }
  return true;
}

bool apply_settings(const std::vector<std::string>& settings) {
  for (const std::string& s : settings) {
    const size_t eq = s.find('=');
    if (setenv(s.substr(0, eq).c_str(), s.c_str() + eq + 1, 1) != 0) {
      fprintf(stderr, "dt-node: cannot set %s: %s\n", s.c_str(), strerror(errno));
      return false;
    }
  }
  return true;
}

// Returns false when the parent is already gone.
bool die_with_launcher() {
  const char* text = getenv("DTRUN_DIE_WITH_LAUNCHER");
  if (text == NULL || strcmp(text, "1") != 0) return true;
  const pid_t parent = getppid();
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) {
    fprintf(stderr, "dt-node: prctl(PR_SET_PDEATHSIG): %s\n", strerror(errno));
    return false;
  }
  // The parent may have died before the request: then nothing would come.
  return getppid() == parent;
}

// Received messages are fresh allocations: keep glibc from mapping and
// unmapping each (and trimming the heap after it).
void tune_malloc_for_a_server() {
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && (strcmp(argv[1], "--help-env") == 0 || strcmp(argv[1], "--help-env=markdown") == 0)) {
    const std::string table = strcmp(argv[1], "--help-env") == 0 ? dt::core::parameters_as_text()
                                                                  : dt::core::parameters_as_markdown();
    fputs(table.c_str(), stdout);
    return 0;
  }
  Args args;
  if (!parse_args(argc, argv, &args)) return 2;
  if (!die_with_launcher()) {
    fprintf(stderr, "dt-node: the launcher that started this process is gone\n");
    return 1;
  }
  dt_role role;
  if (dt_node_role(&role) != DT_OK) {
    fprintf(stderr, "dt-node: %s\n", dt_last_error());
    return 2;
  }
  if (role == DT_ROLE_WORKER) {
    if (args.command.empty()) {
      fprintf(stderr,
              "dt-node: this process is a worker by its environment; workers join a job through "
              "dt_kvstore_create(\"dist_sync\"|\"dist_async\"): give the worker command after \"--\"\n");
      return 2;
    }
    if (!apply_settings(args.env_worker)) return 2;
    if (!args.tls_cert.empty() || !args.tls_key.empty() || !args.tls_ca.empty()) {
      if (!apply_settings({"DT_TLS_CERT_FILE=" + args.tls_cert, "DT_TLS_KEY_FILE=" + args.tls_key,
                           "DT_TLS_CA_FILE=" + args.tls_ca})) {
        return 2;
      }
    }
    std::vector<char*> exec_argv;
    for (std::string& word : args.command) exec_argv.push_back(&word[0]);
    exec_argv.push_back(NULL);
    execvp(exec_argv[0], exec_argv.data());
    fprintf(stderr, "dt-node: cannot run the worker command %s: %s\n", exec_argv[0], strerror(errno));
    return 127;
  }
  if (!apply_settings(args.env_server)) return 2;
  if (role == DT_ROLE_SERVER) tune_malloc_for_a_server();

  // The deadlines and the big-array bound come from the environment
  // (DT_*_TIMEOUT_S, DT_BIGARRAY_BOUND_BYTES, MXNET_KVSTORE_BIGARRAY_BOUND),
  // read by the library as every other node of the job reads them.
  dt_kvstore_options options;
  const dt_status init_status = dt_kvstore_options_init(&options, sizeof options);
  if (init_status != DT_OK) {
    fprintf(stderr, "dt-node: %s: %s\n", dt_status_string(init_status), dt_last_error());
    return 2;
  }
  if (!args.tls_cert.empty() || !args.tls_key.empty() || !args.tls_ca.empty()) {
    // NULL for one not given: the library names it as missing.
    options.tls_cert_file = args.tls_cert.empty() ? NULL : args.tls_cert.c_str();
    options.tls_key_file = args.tls_key.empty() ? NULL : args.tls_key.c_str();
    options.tls_ca_file = args.tls_ca.empty() ? NULL : args.tls_ca.c_str();
  }
  const dt_status status = dt_node_run(&options);
  if (status != DT_OK) {
    fprintf(stderr, "dt-node: %s: %s\n", dt_status_string(status), dt_last_error());
    return 1;
  }
  return 0;
}
