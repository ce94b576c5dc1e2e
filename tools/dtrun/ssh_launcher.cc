#include "ssh_launcher.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <set>
#include <stdexcept>

#include "host_address.h"
#include "job_status.h"
#include "remote_command.h"

namespace dt::dtrun {

namespace {

// How long a failure seen here waits for a remote session to report the
// death that caused it (ssh reports a killed process as exit 128 + signal).
constexpr int kRemoteReportS = 3;

void say(const std::string& text) {
  const std::string line = "dtrun: " + text + "\n";
  write_all(STDERR_FILENO, line.data(), line.size());
}

std::runtime_error system_error(const std::string& what) {
  return std::runtime_error(what + ": " + std::strerror(errno));
}

bool starts_with(const std::string& text, const std::string& prefix) { return text.compare(0, prefix.size(), prefix) == 0; }

struct AddrinfoDeleter {
  void operator()(addrinfo* a) const { freeaddrinfo(a); }
};

// The ssh sessions' stdin: a FIFO that dtrun holds open read-write (so
// opening it for reading never blocks and it never reports end-of-file while
// dtrun holds it), and closes to end every session's stdin at once.
// One per session, so that what is written into one (the job's secret, as
// its first line) reaches that session alone.
class SessionStdin {
 public:
  SessionStdin(const std::string& path, const std::string& first_line) : path_(path) {
    if (mkfifo(path.c_str(), 0600) != 0) throw system_error("mkfifo " + path);
    fd_.reset(open(path.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC));
    if (!fd_) throw system_error("open " + path);
    if (!first_line.empty()) {
      // Far below a pipe's buffer: written whole, before ssh starts.
      const std::string line = first_line + "\n";
      if (write(fd_.get(), line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
        throw system_error("write " + path);
      }
    }
  }
  const std::string& path() const { return path_; }
  void close() { fd_.reset(); }

 private:
  std::string path_;
  UniqueFd fd_;
};

// Runs argv with its stdin from the FIFO at `path`: the supervisor gives every
// process /dev/null, at which ssh would end the remote stdin at once.
std::vector<std::string> with_stdin_from(const std::string& path, const std::vector<std::string>& argv) {
  std::vector<std::string> out = {"/bin/sh", "-c", "f=$1; shift; exec \"$@\" <\"$f\"", "dtrun-ssh", path};
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

// Ends the remote sides through their sessions and waits, bounded, until the
// ssh processes have reported back. Their failures are the consequence of
// this stop, not news; a signal to dtrun ends the wait early.
void stop_remote(Supervisor& supervisor, std::vector<std::unique_ptr<SessionStdin>>& sessions) {
  for (auto& session : sessions) session->close();
  const Clock::time_point deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(kRemoteStopS));
  const auto remote_done = [&] { return supervisor.all_exited("server") && supervisor.all_exited("worker"); };
  while (Clock::now() < deadline) {
    const std::optional<Outcome> event = supervisor.run_until(remote_done, deadline, [] { return Outcome{}; });
    if (!event || starts_with(event->message, "interrupted by ")) return;
  }
}

std::string rsync_destination(const SshHost& host, const std::string& remote_dir) {
  std::string dest = host.destination;
  if (host.address.find(':') != std::string::npos) {
    dest = dest.substr(0, dest.size() - host.address.size()) + "[" + host.address + "]";
  }
  return dest + ":" + remote_dir + "/";
}

std::optional<Outcome> sync_hosts(SignalPipe& signals, const SupervisorSettings& settings, const JobContext& job,
                                  const std::vector<SshHost>& hosts, const std::string& local_dir) {
  const Options& o = job.options;
  std::vector<SshHost> targets;
  std::set<std::string> seen;
  for (const SshHost& h : hosts) {
    if (seen.insert(h.text()).second) targets.push_back(h);
  }
  // Its own supervisor: the job's process group is led by the scheduler,
  // which must outlive everything in it, and it is not started yet.
  Supervisor sync(signals, settings);
  std::vector<RemoteProcess> copies;
  for (size_t i = 0; i < targets.size(); ++i) {
    const ProcessName name("rsync", static_cast<int>(i));
    sync.start({name, rsync_argv(o, targets[i], local_dir, o.sync_dst_dir), job.inherited});
    say(name.text() + " copies " + local_dir + " to " + targets[i].text() + ":" + o.sync_dst_dir);
    copies.push_back({name.text(), targets[i].text()});
  }
  std::optional<Outcome> failed =
      sync.run_until([&] { return sync.all_exited("rsync"); }, job.deadline, [&] { return timed_out(o); });
  if (failed) {
    Outcome described = describe_remote_outcome(*failed, copies);
    described.message = "--sync-dst-dir: " + described.message;
    return described;
  }
  return std::nullopt;
}

}  // namespace

std::vector<std::string> ssh_base_argv(const Options& options, const SshHost& host) {
  std::vector<std::string> argv = {"ssh", "-o", "BatchMode=yes"};
  if (!options.ssh_config.empty()) {
    argv.push_back("-F");
    argv.push_back(options.ssh_config);
  }
  for (const std::string& o : options.ssh_options) {
    argv.push_back("-o");
    argv.push_back(o);
  }
  for (const char* d : {"StrictHostKeyChecking=accept-new", "ConnectTimeout=20", "ServerAliveInterval=5",
                        "ServerAliveCountMax=3"}) {
    argv.push_back("-o");
    argv.push_back(d);
  }
  // -T: no terminal (see remote_command.h); -x: no X11 forwarding.
  argv.push_back("-T");
  argv.push_back("-x");
  if (host.port != 0) {
    argv.push_back("-p");
    argv.push_back(std::to_string(host.port));
  }
  return argv;
}

std::vector<std::string> ssh_argv(const Options& options, const SshHost& host, const std::string& remote_command) {
  std::vector<std::string> argv = ssh_base_argv(options, host);
  argv.push_back(host.destination);
  argv.push_back(remote_command);
  return argv;
}

std::vector<std::string> rsync_argv(const Options& options, const SshHost& host, const std::string& local_dir,
                                    const std::string& remote_dir) {
  std::string rsh;
  for (const std::string& word : ssh_base_argv(options, host)) rsh += (rsh.empty() ? "" : " ") + rsh_quote(word);
  // --timeout bounds a stalled transfer; ssh's ConnectTimeout bounds the connect.
  return {"rsync",
          "-az",
          "--timeout=120",
          "-e",
          rsh,
          "--rsync-path=mkdir -p " + shell_quote(remote_dir) + " && rsync",
          local_dir + "/",
          rsync_destination(host, remote_dir)};
}

EnvMap remote_environment(const EnvMap& inherited, const Options& options, const JobLayout& layout, Role role,
                          int rank, std::optional<LocalPlace> local) {
  EnvMap env = user_settings(inherited, options, role);
  // Resolved as for a local process, so --env and --interface win over
  // dtrun's own environment.
  const EnvMap full = child_environment(inherited, options, layout, role, rank, local);
  for (const auto& [name, value] : full) {
    const bool for_remote = starts_with(name, "DMLC_") || name == kRestartCountVariable ||
                            name == kLocalRankVariable || name == kLocalSizeVariable || name == "LOCAL_RANK" ||
                            name == "LOCAL_WORLD_SIZE";
    if (for_remote && is_launcher_variable(name)) env[name] = value;
  }
  for (const char* name : kForwardedVariables) {
    if (auto it = full.find(name); it != full.end()) env[name] = it->second;
  }
  return env;
}

std::string route_address(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* raw = nullptr;
  const int rv = getaddrinfo(host.c_str(), "22", &hints, &raw);
  std::unique_ptr<addrinfo, AddrinfoDeleter> found(raw);
  if (rv != 0 || raw == nullptr) {
    throw std::runtime_error("host " + host + " does not resolve to an IPv4 address: " + gai_strerror(rv));
  }
  // connect() on a UDP socket sends nothing; it only picks the route, whose
  // source address getsockname() then reports.
  UniqueFd sock(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!sock) throw system_error("socket");
  if (connect(sock.get(), raw->ai_addr, raw->ai_addrlen) != 0) throw system_error("no route to " + host);
  sockaddr_in local{};
  socklen_t len = sizeof local;
  if (getsockname(sock.get(), reinterpret_cast<sockaddr*>(&local), &len) != 0) throw system_error("getsockname");
  char text[INET_ADDRSTRLEN];
  inet_ntop(AF_INET, &local.sin_addr, text, sizeof text);
  return text;
}

Outcome describe_remote_outcome(const Outcome& outcome, const std::vector<RemoteProcess>& remote) {
  for (const RemoteProcess& r : remote) {
    const std::string exited = r.name + " exited with status ";
    if (starts_with(outcome.message, exited)) {
      const int status = std::atoi(outcome.message.c_str() + exited.size());
      std::string text = r.name + " on " + r.host;
      if (status == 255) {
        text += ": ssh exited with status 255 (the connection failed or was lost; see ssh's message above)";
      } else if (status > 128 && status <= 128 + 64) {
        const int sig = status - 128;
        const char* name = strsignal(sig);
        text += " killed by signal " + std::to_string(sig) + (name != nullptr ? std::string(" (") + name + ")" : "") +
                " (remote exit status " + std::to_string(status) + ")";
      } else {
        text += " exited with status " + std::to_string(status);
      }
      return Outcome{outcome.exit_code, text, outcome.process_failed};
    }
    if (starts_with(outcome.message, r.name + " ")) {
      // The local ssh itself ended otherwise (a signal to it).
      return Outcome{outcome.exit_code, r.name + " (ssh to " + r.host + ")" + outcome.message.substr(r.name.size()),
                     outcome.process_failed};
    }
  }
  return outcome;
}

Outcome run_ssh(Supervisor& supervisor, const JobContext& job, SignalPipe& signals,
                const SupervisorSettings& settings) {
  const Options& o = job.options;
  const std::vector<SshHost> hosts = read_hostfile(o.hostfile);
  JobLayout layout =
      job_layout(job, o.interface.empty() ? route_address(hosts.front().address) : host_address(o.interface));
  char cwd[4096];
  if (getcwd(cwd, sizeof cwd) == nullptr) throw system_error("getcwd");
  if (!o.sync_dst_dir.empty()) {
    if (std::optional<Outcome> failed = sync_hosts(signals, settings, job, hosts, cwd)) return *failed;
  }
  const std::string remote_dir = o.sync_dst_dir.empty() ? std::string(cwd) : o.sync_dst_dir;
  // The live summary: the processes' numbers come through the scheduler.
  JobStatus status = JobStatus::for_job(job);
  if (std::optional<Outcome> failed = start_scheduler(supervisor, job, layout, status.scheduler_environment())) {
    return *failed;
  }
  say("the scheduler listens on " + layout.root_uri + ":" + std::to_string(layout.root_port));

  std::vector<std::unique_ptr<SessionStdin>> sessions;
  std::vector<RemoteProcess> remote;
  // The job's secret goes through each session's stdin, never a command line.
  const auto secret = job.inherited.find("DT_JOB_SECRET");
  const std::string secret_line = secret == job.inherited.end() ? "" : secret->second;
  // worker_restart_count: 0, or k for the k-th restart in place of a worker
  // (or of a replicated job's server),
  // which needs a session of its own (the last one's secret line was read)
  // and DT_WORKER_RESTART_COUNT on the remote command line.
  const auto session_spec = [&](Role role, int rank, const SshHost& host, const std::vector<std::string>& command,
                                int worker_restart_count) {
    const ProcessName name(role_name(role), rank);
    const std::optional<LocalPlace> local =
        role == Role::kWorker ? std::optional<LocalPlace>(worker_local_place(hosts, o.num_servers, o.num_workers, rank))
                              : std::nullopt;
    EnvMap env = remote_environment(job.inherited, o, layout, role, rank, local);
    env.erase("DT_JOB_SECRET");
    status.add_environment(role, rank, env);
    if (worker_restart_count > 0) env[kWorkerRestartCountVariable] = std::to_string(worker_restart_count);
    const std::string line = remote_command(remote_dir, env, command, !secret_line.empty());
    sessions.push_back(std::make_unique<SessionStdin>(
        job.work_dir + "/ssh-stdin-" + std::to_string(sessions.size()), secret_line));
    return ChildSpec{name, with_stdin_from(sessions.back()->path(), ssh_argv(o, host, line)), job.inherited};
  };
  const auto start_remote = [&](Role role, int rank, const SshHost& host, const std::vector<std::string>& command) {
    const ProcessName name(role_name(role), rank);
    // Recorded first: a start that fails half-way still names its host.
    remote.push_back({name.text(), host.text()});
    // session_spec by reference: the supervisor calls this only from
    // run_until, which runs within this function.
    const auto restarted = [&session_spec, role, rank, host, command](int restart_count) {
      return session_spec(role, rank, host, command, restart_count);
    };
    supervisor.start(session_spec(role, rank, host, command, 0), restarted);
    say(name.text() + " runs on " + host.text());
  };
  std::optional<Outcome> failed;
  try {
    for (int s = 0; s < o.num_servers; ++s) start_remote(Role::kServer, s, server_host(hosts, s), {job.dt_node});
    for (int w = 0; w < o.num_workers; ++w) {
      start_remote(Role::kWorker, w, worker_host(hosts, o.num_servers, w), o.command);
    }
    failed = supervisor.run_until(
        [&] {
          status.tick(supervisor);
          return supervisor.all_exited("worker");
        },
        job.deadline, [&] { return timed_out(o); });
    if (failed && failed->exit_code < 128 && failed->exit_code != 124) {
      // A remote process that dies is reported only when its ssh session
      // ends, often after the scheduler here has seen its connection close
      // and exited with "peer lost". The process that died is the better
      // answer: give the sessions a moment to report a death by signal.
      const Clock::time_point grace = std::min(job.deadline, Clock::now() + std::chrono::seconds(kRemoteReportS));
      while (std::optional<Outcome> next = supervisor.run_until([&] { return supervisor.all_exited(); }, grace,
                                                                [] { return Outcome{}; })) {
        if (next->exit_code == 0) break;  // the grace is over
        if (next->exit_code >= 128) {
          failed = next;
          break;
        }
      }
    }
  } catch (...) {
    stop_remote(supervisor, sessions);
    throw;
  }
  const Outcome outcome = describe_remote_outcome(failed ? *failed : finish(supervisor, job), remote);
  stop_remote(supervisor, sessions);
  // After the scheduler ended: it wrote the last numbers it heard.
  status.print_table();
  return outcome;
}

}  // namespace dt::dtrun
