#include "options.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "environment.h"

namespace dt::dtrun {

const char* usage_text() {
  return "usage: dtrun -n WORKERS [-s SERVERS] [--launcher local|ssh|mpi|slurm]\n"
         "             [-H HOSTFILE] [--sync-dst-dir DIR] [--env K=V]...\n"
         "             [--env-server K=V]... [--env-worker K=V]... [--interface IF]\n"
         "             [--log-dir DIR] [--timeline FILE] [--timeout S] [--tls]\n"
         "             [--worker-loss fail|continue]\n"
         "             [--server-replication N] [--max-restarts N]\n"
         "             [--] command [args...]\n"
         "\n"
         "Starts a parameter-server job: a scheduler and SERVERS servers (dt-node) and\n"
         "WORKERS copies of the command, with the DMLC_* variables set; prefixes their\n"
         "output with role and rank; stops every process when one fails, on Ctrl-C or\n"
         "after --timeout. Exit code: 0 when every process ends cleanly; the failed\n"
         "process's status (128+signal when killed); 124 on timeout; 130 on SIGINT.\n"
         "\n"
         "  -n, --num-workers N   workers\n"
         "  -s, --num-servers N   servers (default: as many as workers; 0 for the\n"
         "                        all-reduce stores, allreduce and dist_nccl)\n"
         "  --launcher L          local (default): all on this host;\n"
         "                        ssh: the scheduler here, servers and workers on the\n"
         "                        -H hosts through ssh (BatchMode)\n"
         "                        slurm: the scheduler here, servers and workers via srun\n"
         "                        mpi: the scheduler here, servers and workers as the\n"
         "                        ranks of one mpirun (-H: mpirun's --hostfile)\n"
         "  -H, --hostfile FILE   ssh: one host[:port] per line; the servers, then the\n"
         "                        workers, take them in turn (launch.py's order);\n"
         "                        mpi: passed to mpirun --hostfile\n"
         "  --sync-dst-dir DIR    ssh: rsync this directory to DIR on every host first\n"
         "                        and run there; other launchers: ignored (a note says so)\n"
         "  --ssh-config FILE     ssh: ssh -F FILE\n"
         "  --ssh-option K=V      ssh: ssh -o K=V (repeatable; overrides dtrun's defaults)\n"
         "  --env K=V | K:V | K   for every process (a bare K passes this shell's value)\n"
         "  --env-server K=V      for the scheduler and the servers\n"
         "  --env-worker K=V      for the workers\n"
         "  --interface IF        DMLC_INTERFACE: the network interface nodes use\n"
         "  --log-dir DIR         also write each process's output to DIR/<role>-<rank>.log\n"
         "  --timeline FILE       record every process's timeline (DT_TIMELINE) and merge\n"
         "                        them into FILE at the end: Chrome trace-event JSON for\n"
         "                        Perfetto or chrome://tracing (docs/profiling.md)\n"
         "  --timeout S           stop the job after S seconds (exit code 124)\n"
         "  --status-every S      every S seconds a line on stdout: each worker's step and\n"
         "                        images/s, the slowest, each server's requests/s and\n"
         "                        busy %, bytes/s, restarts and losses; a table per\n"
         "                        worker and server at the end: compute, communication,\n"
         "                        waiting (0: off; default 10 when stdout is a terminal,\n"
         "                        else off); with ssh, mpi or slurm the numbers come\n"
         "                        through the scheduler's heartbeats\n"
         "  --tls                 tcp connections over mutual TLS: a throw-away CA and\n"
         "                        certificate for this job (openssl, EC P-256, valid 2\n"
         "                        days) in a private directory removed at the end, and\n"
         "                        DT_TLS_* for every process; --launcher local only\n"
         "  --worker-loss P       fail (default): a worker that fails stops the job;\n"
         "                        continue: the job goes on with the workers left\n"
         "                        (DT_WORKER_LOSS for every process; local and ssh)\n"
         "  --server-replication N\n"
         "                        1: every key part is kept on two servers (its own and\n"
         "                        the next one), so the job goes on when a server is\n"
         "                        lost; the lost server's parts then get new copies\n"
         "                        on the next servers left, so later losses are\n"
         "                        survived too, one at a time, while a server is left\n"
         "                        (DT_SERVER_REPLICATION for every process;\n"
         "                        dist_sync, 2 or more servers; local and ssh)\n"
         "  --max-restarts N      when a process of the job fails, stop every process and\n"
         "                        start the whole job again, up to N times (default 0),\n"
         "                        as torchrun does; DT_RESTART_COUNT tells the processes\n"
         "                        which run they are. A program that saves a checkpoint\n"
         "                        directory (dt_fit_options.checkpoint_dir) goes on from\n"
         "                        its last complete checkpoint. Not after Ctrl-C, a\n"
         "                        signal to dtrun or --timeout (one deadline for all\n"
         "                        runs). With --worker-loss continue a failed worker is\n"
         "                        restarted alone, out of the same N, and rejoins the job\n"
         "                        (DT_WORKER_RESTART_COUNT: how many times it was); with\n"
         "                        --server-replication 1 so is a failed server, which\n"
         "                        rejoins as a replica of the keys it held\n"
         "  -h, --help            this text\n"
         "\n"
         "The command starts at the first word that is not an option, as with\n"
         "launch.py (dtrun -n 2 -s 2 python train.py --lr 0.1), or after \"--\", which\n"
         "also lets a command start with '-'.\n"
         "\n"
         "A command given as one argument holding whitespace, as launch.py users write\n"
         "it (-- \"python train.py --lr 0.1\"), runs through /bin/sh -c: the shell splits\n"
         "it and expands its variables and globs (not with --launcher slurm). Several\n"
         "arguments run as they are, without a shell.\n"
         "\n"
         "dt-node is DT_NODE_BINARY, else the dt-node beside dtrun, else found in PATH.\n";
}

namespace {

int parse_count(const std::string& flag, const std::string& text, int min) {
  errno = 0;
  char* end = nullptr;
  const long v = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || errno != 0 || *end != '\0' || v < min || v > 65535) {
    throw UsageError(flag + " needs an integer in [" + std::to_string(min) + ", 65535], got \"" + text + "\"");
  }
  return static_cast<int>(v);
}

double parse_seconds(const std::string& flag, const std::string& text) {
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || errno != 0 || *end != '\0' || !std::isfinite(v) || v <= 0) {
    throw UsageError(flag + " needs a positive number of seconds, got \"" + text + "\"");
  }
  return v;
}

bool valid_name(const std::string& name) {
  if (name.empty() || (name[0] >= '0' && name[0] <= '9')) return false;
  for (char c : name) {
    const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
    if (!ok) return false;
  }
  return true;
}

EnvSetting parse_env(const std::string& flag, const std::string& text) {
  EnvSetting s;
  // '=' first: values such as paths or URLs may hold ':' but a name cannot.
  std::string::size_type cut = text.find('=');
  if (cut == std::string::npos) cut = text.find(':');
  if (cut == std::string::npos) {
    s.name = text;
    s.from_caller = true;
  } else {
    s.name = text.substr(0, cut);
    s.value = text.substr(cut + 1);
  }
  if (!valid_name(s.name)) throw UsageError(flag + " \"" + text + "\" does not start with a variable name");
  if (is_launcher_variable(s.name)) {
    throw UsageError(flag + " " + s.name + ": dtrun sets this variable itself (see -n, -s, --interface)");
  }
  return s;
}

}  // namespace

Options parse_options(const std::vector<std::string>& args) {
  Options o;
  bool servers_given = false;
  bool workers_given = false;
  size_t i = 0;
  // The value of flag: the rest of "--flag=value" / "-n4", else the next argument.
  const auto value_of = [&](const std::string& arg, const std::string& flag) -> std::string {
    if (arg.size() > flag.size()) return arg.substr(flag.size() + (arg[flag.size()] == '=' ? 1 : 0));
    if (i + 1 >= args.size()) throw UsageError(flag + " needs a value");
    return args[++i];
  };
  const auto is = [](const std::string& arg, const std::string& flag) {
    if (arg.compare(0, flag.size(), flag) != 0) return false;
    if (arg.size() == flag.size()) return true;
    // Short flags take attached values ("-n4"), long ones only after '='.
    return flag.size() == 2 || arg[flag.size()] == '=';
  };
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {
      o.command.assign(args.begin() + static_cast<std::ptrdiff_t>(i) + 1, args.end());
      break;
    }
    // launch.py's habit (argparse's REMAINDER): the first word that is not an
    // option, nor an option's value, starts the command, and every word after
    // it is the command's, options of its own included.
    if (a.empty() || a[0] != '-') {
      o.command.assign(args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
      break;
    }
    if (a == "-h" || a == "--help") {
      o.help = true;
      return o;
    } else if (is(a, "-n") || is(a, "--num-workers")) {
      o.num_workers = parse_count("-n", value_of(a, a.rfind("--", 0) == 0 ? "--num-workers" : "-n"), 1);
      workers_given = true;
    } else if (is(a, "-s") || is(a, "--num-servers")) {
      o.num_servers = parse_count("-s", value_of(a, a.rfind("--", 0) == 0 ? "--num-servers" : "-s"), 0);
      servers_given = true;
    } else if (is(a, "--launcher")) {
      const std::string l = value_of(a, "--launcher");
      if (l == "local") {
        o.launcher = Launcher::kLocal;
      } else if (l == "slurm") {
        o.launcher = Launcher::kSlurm;
      } else if (l == "ssh") {
        o.launcher = Launcher::kSsh;
      } else if (l == "mpi") {
        o.launcher = Launcher::kMpi;
      } else {
        throw UsageError("--launcher must be local, ssh, mpi or slurm, got \"" + l + "\"");
      }
    } else if (is(a, "--env-server")) {
      o.env_server.push_back(parse_env("--env-server", value_of(a, "--env-server")));
    } else if (is(a, "--env-worker")) {
      o.env_worker.push_back(parse_env("--env-worker", value_of(a, "--env-worker")));
    } else if (is(a, "--env")) {
      o.env.push_back(parse_env("--env", value_of(a, "--env")));
    } else if (is(a, "--interface")) {
      o.interface = value_of(a, "--interface");
      if (o.interface.empty()) throw UsageError("--interface needs an interface name");
    } else if (is(a, "--log-dir")) {
      o.log_dir = value_of(a, "--log-dir");
      if (o.log_dir.empty()) throw UsageError("--log-dir needs a directory");
    } else if (is(a, "--timeline")) {
      const std::string file = value_of(a, "--timeline");
      if (file.empty()) throw UsageError("--timeline needs a file");
      // Absolute: every process writes its part beside it, wherever it runs from.
      o.timeline = std::filesystem::absolute(file).lexically_normal().string();
      o.env.push_back(EnvSetting{"DT_TIMELINE", o.timeline, false});
    } else if (is(a, "-H") || is(a, "--hostfile")) {
      o.hostfile = value_of(a, a.rfind("--", 0) == 0 ? "--hostfile" : "-H");
      if (o.hostfile.empty()) throw UsageError("-H needs a hostfile");
    } else if (is(a, "--sync-dst-dir")) {
      o.sync_dst_dir = value_of(a, "--sync-dst-dir");
      if (o.sync_dst_dir.empty()) throw UsageError("--sync-dst-dir needs a directory");
    } else if (is(a, "--ssh-config")) {
      o.ssh_config = value_of(a, "--ssh-config");
      if (o.ssh_config.empty()) throw UsageError("--ssh-config needs a file");
    } else if (is(a, "--ssh-option")) {
      const std::string opt = value_of(a, "--ssh-option");
      // ssh takes "Key=Value" or "Key Value"; a bare key is an ssh error
      // better reported here, before any process starts.
      if (opt.find_first_of("= ") == std::string::npos || opt[0] == '=' || opt[0] == ' ') {
        throw UsageError("--ssh-option needs Key=Value, got \"" + opt + "\"");
      }
      o.ssh_options.push_back(opt);
    } else if (is(a, "--timeout")) {
      o.timeout_s = parse_seconds("--timeout", value_of(a, "--timeout"));
    } else if (is(a, "--status-every")) {
      const std::string text = value_of(a, "--status-every");
      o.status_every_s = text == "0" ? 0 : parse_seconds("--status-every", text);
    } else if (a == "--tls") {
      o.tls = true;
    } else if (is(a, "--worker-loss")) {
      o.worker_loss = value_of(a, "--worker-loss");
      if (o.worker_loss != "fail" && o.worker_loss != "continue") {
        throw UsageError("--worker-loss must be fail or continue, got \"" + o.worker_loss + "\"");
      }
      o.env.push_back(EnvSetting{"DT_WORKER_LOSS", o.worker_loss, false});
    } else if (is(a, "--server-replication")) {
      o.server_replication = value_of(a, "--server-replication");
      if (o.server_replication != "0" && o.server_replication != "1") {
        throw UsageError("--server-replication must be 0 or 1 (one replica per key part), got \"" +
                         o.server_replication + "\"");
      }
      o.env.push_back(EnvSetting{"DT_SERVER_REPLICATION", o.server_replication, false});
    } else if (is(a, "--max-restarts")) {
      o.max_restarts = parse_count("--max-restarts", value_of(a, "--max-restarts"), 0);
    } else {
      throw UsageError("unknown option \"" + a + "\" (the command starts at its first word that is not an option, "
                       "or after \"--\")");
    }
  }
  if (!workers_given) throw UsageError("-n WORKERS is required");
  if (!servers_given) o.num_servers = o.num_workers;
  if (o.command.empty()) throw UsageError("no command: put the worker command after the options (or after \"--\")");
  if (o.command.size() == 1 && o.command[0].find_first_of(" \t\n") != std::string::npos) {
    o.command = {"/bin/sh", "-c", o.command[0]};
  }
  if (o.launcher == Launcher::kSsh && o.hostfile.empty()) throw UsageError("--launcher ssh needs -H HOSTFILE");
  if (o.launcher != Launcher::kSsh && (!o.ssh_config.empty() || !o.ssh_options.empty())) {
    throw UsageError("--ssh-config and --ssh-option need --launcher ssh");
  }
  if (o.tls && o.launcher != Launcher::kLocal) {
    throw UsageError("--tls needs --launcher local: processes on other hosts cannot read this host's private "
                     "directory; put a certificate for the job on every host and pass DT_TLS_CERT_FILE, "
                     "DT_TLS_KEY_FILE, DT_TLS_CA_FILE with --env");
  }
  if (!o.worker_loss.empty() && (o.launcher == Launcher::kMpi || o.launcher == Launcher::kSlurm)) {
    // One mpirun or srun holds every rank, and it ends them all when one fails.
    o.notes.push_back("--worker-loss " + o.worker_loss + ": the servers and scheduler follow it, but mpirun and srun "
                      "stop every rank when one fails");
  }
  if (o.server_replication == "1" && o.num_servers < 2) {
    // The replica of a key part lives on the next server; one server has none.
    throw UsageError("--server-replication 1 needs 2 or more servers (-s)");
  }
  if (!o.server_replication.empty() && (o.launcher == Launcher::kMpi || o.launcher == Launcher::kSlurm)) {
    o.notes.push_back("--server-replication " + o.server_replication + ": the servers keep the replicas, but mpirun "
                      "and srun stop every rank when one fails");
  }
  if (o.launcher != Launcher::kSsh && !o.sync_dst_dir.empty()) {
    // launch.py takes it with every launcher and uses it only over ssh; job
    // scripts written for it pass it regardless.
    o.notes.push_back("--sync-dst-dir " + o.sync_dst_dir +
                      " ignored: only --launcher ssh copies files; this launcher runs in the current directory");
    o.sync_dst_dir.clear();
  }
  return o;
}

bool continues_after_worker_loss(const Options& options, const std::map<std::string, std::string>& inherited) {
  std::string value;
  if (const auto it = inherited.find("DT_WORKER_LOSS"); it != inherited.end()) value = it->second;
  for (const EnvSetting& s : options.env) {
    if (s.name == "DT_WORKER_LOSS" && !s.from_caller) value = s.value;
  }
  return value == "continue";
}

int tolerated_server_losses(const Options& options, const std::map<std::string, std::string>& inherited) {
  std::string value;
  if (const auto it = inherited.find("DT_SERVER_REPLICATION"); it != inherited.end()) value = it->second;
  for (const EnvSetting& s : options.env) {
    if (s.name == "DT_SERVER_REPLICATION" && !s.from_caller) value = s.value;
  }
  // Every part has two holders, and gets a new copy after a loss while two
  // servers are left: the job may outlive all servers but one, lost one
  // after the other, which the scheduler checks loss by loss.
  return value == "1" ? std::max(1, options.num_servers - 1) : 0;
}

}  // namespace dt::dtrun
