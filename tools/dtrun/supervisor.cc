#include "supervisor.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace dt::dtrun {

using std::chrono::milliseconds;

std::string ProcessName::text() const { return rank < 0 ? role : role + " " + std::to_string(rank); }

std::string describe_wait_status(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    const char* name = strsignal(sig);
    return "killed by signal " + std::to_string(sig) + (name != nullptr ? std::string(" (") + name + ")" : "");
  }
  return "stopped with wait status " + std::to_string(status);
}

int exit_code_of(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

struct Supervisor::Child {
  Child(const ChildSpec& s, RestartedSpec r, int restarts)
      : name(s.name), spec(s), restarted(std::move(r)), restart_count(restarts) {}
  ProcessName name;
  ChildSpec spec;           // what a restart in place runs again,
  RestartedSpec restarted;  // unless this is set
  int restart_count;        // 0, or k for the k-th restart in place of this process
  pid_t pid = -1;
  UniqueFd log;
  UniqueFd out;
  UniqueFd err;
  std::unique_ptr<LinePrefixer> out_lines;
  std::unique_ptr<LinePrefixer> err_lines;
  bool exited = false;
  int status = 0;
};

namespace {

const char* colour_of(const std::string& role) {
  if (role == "scheduler") return "35";
  if (role == "server") return "36";
  if (role == "worker") return "32";
  return "33";
}

std::runtime_error system_error(const std::string& what) {
  return std::runtime_error(what + ": " + std::strerror(errno));
}

// What a child reports through its close-on-exec pipe when it cannot exec.
struct ChildFailure {
  int stage;  // 0: joining the process group, 1: exec
  int error;
};

milliseconds until(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
  return std::max(left, milliseconds(0));
}

// Those of restarted not named in lost.
std::vector<RestartedProcess> not_lost(const std::vector<RestartedProcess>& restarted,
                                       const std::vector<std::string>& lost) {
  std::vector<RestartedProcess> kept;
  for (const RestartedProcess& p : restarted) {
    if (std::find(lost.begin(), lost.end(), p.name) == lost.end()) kept.push_back(p);
  }
  return kept;
}

}  // namespace

Supervisor::Supervisor(SignalPipe& signals, SupervisorSettings settings)
    : signals_(signals), settings_(std::move(settings)) {
  if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) throw system_error("prctl(PR_SET_CHILD_SUBREAPER)");
  if (!settings_.log_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(settings_.log_dir, ec);
    if (ec) throw std::runtime_error("cannot create --log-dir " + settings_.log_dir + ": " + ec.message());
  }
}

Supervisor::~Supervisor() { stop(); }

pid_t Supervisor::start(const ChildSpec& spec, RestartedSpec restarted) {
  return start_child(spec, std::move(restarted), settings_.append_logs, 0);
}

pid_t Supervisor::start_child(const ChildSpec& spec, RestartedSpec restarted, bool append_log, int restart_count) {
  auto child = std::make_unique<Child>(spec, std::move(restarted), restart_count);
  if (!settings_.log_dir.empty()) {
    const std::string path = settings_.log_dir + "/" +
                             (spec.name.rank < 0 ? spec.name.role : spec.name.role + "-" + std::to_string(spec.name.rank)) +
                             ".log";
    const int mode = append_log ? O_APPEND : O_TRUNC;
    child->log.reset(open(path.c_str(), O_WRONLY | O_CREAT | mode | O_CLOEXEC, 0644));
    if (!child->log) throw system_error("cannot open log file " + path);
  }
  int out[2], err[2], report[2];
  if (pipe2(out, O_CLOEXEC) != 0) throw system_error("pipe2");
  UniqueFd out_r(out[0]), out_w(out[1]);
  if (pipe2(err, O_CLOEXEC) != 0) throw system_error("pipe2");
  UniqueFd err_r(err[0]), err_w(err[1]);
  if (pipe2(report, O_CLOEXEC) != 0) throw system_error("pipe2");
  UniqueFd report_r(report[0]), report_w(report[1]);

  // Everything the child touches is built before fork: after it, only
  // async-signal-safe calls.
  std::vector<char*> argv;
  for (const std::string& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const std::vector<std::string> env_strings = to_envp(spec.env);
  std::vector<char*> envp;
  for (const std::string& e : env_strings) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  const pid_t parent = getpid();
  const pid_t group = pgid_;

  const pid_t pid = fork();
  if (pid < 0) throw system_error("fork");
  if (pid == 0) {
    ChildFailure failure{0, 0};
    // The parent sets the group too; doing it on both sides closes the race
    // with a signal to the group before the child has joined.
    if (setpgid(0, group) != 0) {
      failure.error = errno;
      [[maybe_unused]] const ssize_t n = write(report_w.get(), &failure, sizeof failure);
      _exit(127);
    }
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);  // dtrun died before the line above
    const int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    // Background process groups that read the terminal get SIGTTIN and stop.
    if (null_fd >= 0) dup2(null_fd, STDIN_FILENO);
    dup2(out_w.get(), STDOUT_FILENO);
    dup2(err_w.get(), STDERR_FILENO);
    // Ignored signals stay ignored across exec; the job must see defaults.
    for (int sig : {SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGCHLD}) signal(sig, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    execvpe(argv[0], argv.data(), envp.data());
    failure = ChildFailure{1, errno};
    [[maybe_unused]] const ssize_t n = write(report_w.get(), &failure, sizeof failure);
    _exit(127);
  }
  if (pgid_ == 0) pgid_ = pid;
  // EACCES once the child has exec'd: it already joined by itself.
  setpgid(pid, pgid_);
  children_left_ = true;
  child->pid = pid;
  out_w.reset();
  err_w.reset();
  report_w.reset();
  child->out = std::move(out_r);
  child->err = std::move(err_r);
  const std::string label = spec.name.text();
  child->out_lines = std::make_unique<LinePrefixer>(label, settings_.colour_stdout ? colour_of(spec.name.role) : "",
                                                    STDOUT_FILENO, child->log.get());
  child->err_lines = std::make_unique<LinePrefixer>(label, settings_.colour_stderr ? colour_of(spec.name.role) : "",
                                                    STDERR_FILENO, child->log.get());
  children_.push_back(std::move(child));

  // exec closes the report pipe (EOF: started) or the child writes why it
  // could not; either happens at once, the bound only guards a stopped child.
  pollfd p{report_r.get(), POLLIN, 0};
  int ready = 0;
  do {
    ready = poll(&p, 1, 10000);
  } while (ready < 0 && errno == EINTR);
  ChildFailure failure{};
  ssize_t n = 0;
  if (ready > 0) {
    do {
      n = read(report_r.get(), &failure, sizeof failure);
    } while (n < 0 && errno == EINTR);
  }
  if (ready == 0) throw std::runtime_error("cannot start " + label + ": " + spec.argv[0] + " did not start within 10 s");
  if (n == static_cast<ssize_t>(sizeof failure)) {
    throw std::runtime_error("cannot start " + label + ": " +
                             (failure.stage == 0 ? std::string("joining the job's process group")
                                                 : "running " + spec.argv[0]) +
                             ": " + std::strerror(failure.error));
  }
  // The pids let a user (or a test) find and signal one process of the job.
  const std::string started = "dtrun: " + label + " is pid " + std::to_string(pid) + "\n";
  write_all(STDERR_FILENO, started.data(), started.size());
  return pid;
}

void Supervisor::reap(Events& events) {
  for (;;) {
    int status = 0;
    const pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid == 0) return;
    if (pid < 0) {
      if (errno == EINTR) continue;
      children_left_ = false;  // ECHILD
      return;
    }
    // Orphans reparented to us (we are a subreaper) are reaped and ignored.
    for (auto& c : children_) {
      if (c->pid == pid && !c->exited) {
        c->exited = true;
        c->status = status;
        events.exits.push_back(c.get());
      }
    }
  }
}

Supervisor::Events Supervisor::poll_once(milliseconds timeout) {
  std::vector<pollfd> fds;
  std::vector<std::pair<UniqueFd*, LinePrefixer*>> streams;
  fds.push_back({signals_.read_fd(), POLLIN, 0});
  for (auto& c : children_) {
    for (auto [fd, lines] : {std::pair{&c->out, c->out_lines.get()}, std::pair{&c->err, c->err_lines.get()}}) {
      if (!*fd) continue;
      fds.push_back({fd->get(), POLLIN, 0});
      streams.emplace_back(fd, lines);
    }
  }
  const int ready = poll(fds.data(), fds.size(), static_cast<int>(timeout.count()));
  Events events;
  if (ready < 0 && errno != EINTR) throw system_error("poll");
  if (ready > 0) {
    for (size_t i = 1; i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      auto [fd, lines] = streams[i - 1];
      char buf[65536];
      const ssize_t n = read(fd->get(), buf, sizeof buf);
      if (n > 0) {
        lines->feed(buf, static_cast<size_t>(n));
      } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
        lines->finish();
        fd->reset();
      }
    }
  }
  for (int sig : signals_.drain()) {
    if (sig != SIGCHLD) events.signals.push_back(sig);
  }
  // Reaping every round, not only after SIGCHLD: a dropped byte of a full
  // signal pipe must not hide an exit.
  if (children_left_) reap(events);
  return events;
}

std::optional<Outcome> Supervisor::run_until(const std::function<bool()>& done, Clock::time_point deadline,
                                             const std::function<Outcome()>& on_deadline) {
  std::optional<Outcome> outcome = next_outcome(done, deadline, on_deadline);
  // The caller stops the job after any outcome (a launcher's later
  // run_until only collects the exits of that stop).
  if (outcome) stopping_ = true;
  return outcome;
}

std::optional<Outcome> Supervisor::next_outcome(const std::function<bool()>& done, Clock::time_point deadline,
                                                const std::function<Outcome()>& on_deadline) {
  for (;;) {
    if (done()) return std::nullopt;
    if (Clock::now() >= deadline) return on_deadline();
    // Capped so that done() may also watch files (the scheduler's port).
    const Events events = poll_once(std::min(until(deadline), milliseconds(100)));
    for (int sig : events.signals) {
      return Outcome{128 + sig, std::string("interrupted by ") + (sig == SIGINT    ? "SIGINT"
                                                                   : sig == SIGTERM ? "SIGTERM"
                                                                                     : "SIGHUP")};
    }
    // A process killed by a signal is the likelier cause when several end in
    // one round: the others typically exit reporting the peer they lost.
    const Child* failed = nullptr;
    std::vector<const Child*> rejoining;
    for (const Child* c : events.exits) {
      if (exit_code_of(c->status) != 0 && may_rejoin(*c, deadline, static_cast<int>(rejoining.size()))) {
        rejoining.push_back(c);
        continue;
      }
      if (exit_code_of(c->status) != 0 && (tolerated_worker_loss(*c) || tolerated_server_loss(*c))) continue;
      if (WIFSIGNALED(c->status)) {
        failed = c;
        break;
      }
      if (failed == nullptr && exit_code_of(c->status) != 0) failed = c;
    }
    if (failed != nullptr) {
      return Outcome{exit_code_of(failed->status), failed->name.text() + " " + describe_wait_status(failed->status),
                     true};
    }
    // Only now: a failure in the same round that stops the job (a server
    // and a worker of one host) must leave the budget to a whole-job restart.
    for (const Child* c : rejoining) restart_to_rejoin(*c);
  }
}

bool Supervisor::may_rejoin(const Child& failed, Clock::time_point deadline, int pending) const {
  const std::string& role = failed.name.role;
  const bool rejoins = role == "worker" ? settings_.continue_after_worker_loss
                                        : role == "server" && settings_.servers_rejoin;
  if (!rejoins) return false;
  const int restarts_left = settings_.max_restarts - settings_.restarts_done - restarts() - pending;
  if (restarts_left <= 0 || stopping_ || Clock::now() >= deadline) return false;
  // With no other process of its role left the job is over (or has failed):
  // there is no running job to rejoin, nor, for a server, one that holds the
  // replicas it would be filled from.
  return others_of_role_run(failed);
}

void Supervisor::restart_to_rejoin(const Child& failed) {
  const bool server = failed.name.role == "server";
  const int restart = settings_.restarts_done + restarts() + 1;
  const std::string line = "dtrun: " + failed.name.text() + " " + describe_wait_status(failed.status) +
                           "; starting it again to rejoin the running job" + (server ? " as a replica" : "") +
                           " (restart " + std::to_string(restart) + " of at most " +
                           std::to_string(settings_.max_restarts) + ", " +
                           (server ? "DT_SERVER_REPLICATION=1" : "DT_WORKER_LOSS=continue") + ")\n";
  write_all(STDERR_FILENO, line.data(), line.size());
  const int restart_count = failed.restart_count + 1;
  ChildSpec again = failed.spec;
  if (failed.restarted) {
    again = failed.restarted(restart_count);
  } else {
    again.env[kWorkerRestartCountVariable] = std::to_string(restart_count);
  }
  ++(server ? server_restarts_ : worker_restarts_);
  std::vector<RestartedProcess>& restarted = server ? restarted_servers_ : restarted_workers_;
  const auto same_process = [&](const RestartedProcess& p) { return p.name == failed.name.text(); };
  const auto known = std::find_if(restarted.begin(), restarted.end(), same_process);
  if (known == restarted.end()) {
    restarted.push_back({failed.name.text(), restart_count});
  } else {
    known->restarts = restart_count;
  }
  start_child(again, failed.restarted, true, restart_count);
}

std::vector<RestartedProcess> Supervisor::rejoined_workers() const {
  return not_lost(restarted_workers_, lost_workers_);
}

std::vector<RestartedProcess> Supervisor::rejoined_servers() const {
  return not_lost(restarted_servers_, lost_servers_);
}

bool Supervisor::tolerated_worker_loss(const Child& failed) {
  if (!settings_.continue_after_worker_loss || failed.name.role != "worker") return false;
  // Started again to rejoin, it found the job over (the scheduler refuses a
  // worker once every other one said goodbye): the job went on without its
  // predecessor already, and finished.
  if (found_no_job_to_rejoin(failed, "DT_WORKER_LOSS=continue", lost_workers_)) return true;
  return go_on_without(failed, "the job goes on without it (DT_WORKER_LOSS=continue)", lost_workers_);
}

bool Supervisor::tolerated_server_loss(const Child& failed) {
  if (failed.name.role != "server") return false;
  // Started again to rejoin, it found the job over (every other server had
  // finished, and so had the work): the job went on from the replicas of its
  // predecessor's keys already, and finished.
  if (found_no_job_to_rejoin(failed, "DT_SERVER_REPLICATION=1", lost_servers_)) return true;
  if (static_cast<int>(lost_servers_.size()) >= settings_.tolerated_server_losses) return false;
  return go_on_without(failed, "the job goes on with the replicas of its keys (DT_SERVER_REPLICATION=1)",
                       lost_servers_);
}

bool Supervisor::found_no_job_to_rejoin(const Child& failed, const std::string& variable,
                                        std::vector<std::string>& lost) {
  if (failed.restart_count == 0 || others_of_role_run(failed) || !others_of_role_succeeded(failed)) return false;
  const std::string line = "dtrun: " + failed.name.text() + " " + describe_wait_status(failed.status) +
                           " after the job's other " + failed.name.role +
                           "s had finished: there was no running job to rejoin (" + variable + ")\n";
  write_all(STDERR_FILENO, line.data(), line.size());
  lost.push_back(failed.name.text());
  return true;
}

bool Supervisor::others_of_role_succeeded(const Child& failed) const {
  // A process started again in place counts by its newest run: an earlier
  // run that was killed is not a failure of the job's.
  const auto superseded = [&](const Child& c) {
    return std::any_of(children_.begin(), children_.end(), [&](const auto& later) {
      return later->name.role == c.name.role && later->name.rank == c.name.rank &&
             later->restart_count > c.restart_count;
    });
  };
  return std::all_of(children_.begin(), children_.end(), [&](const auto& c) {
    return c.get() == &failed || c->name.role != failed.name.role || c->name.rank == failed.name.rank ||
           superseded(*c) || (c->exited && exit_code_of(c->status) == 0);
  });
}

bool Supervisor::others_of_role_run(const Child& failed) const {
  return std::any_of(children_.begin(), children_.end(), [&](const auto& c) {
    return c.get() != &failed && c->name.role == failed.name.role && !c->exited;
  });
}

bool Supervisor::go_on_without(const Child& failed, const std::string& how, std::vector<std::string>& lost) {
  if (!others_of_role_run(failed)) return false;
  const std::string line = "dtrun: " + failed.name.text() + " " + describe_wait_status(failed.status) + "; " + how + "\n";
  write_all(STDERR_FILENO, line.data(), line.size());
  lost.push_back(failed.name.text());
  return true;
}

bool Supervisor::all_exited(const std::string& role) const {
  return std::all_of(children_.begin(), children_.end(),
                     [&](const auto& c) { return c->exited || c->name.role != role; });
}

bool Supervisor::all_exited() const {
  return std::all_of(children_.begin(), children_.end(), [](const auto& c) { return c->exited; });
}

bool Supervisor::has_exited(pid_t pid) const {
  return std::any_of(children_.begin(), children_.end(), [&](const auto& c) { return c->pid == pid && c->exited; });
}

std::string Supervisor::still_running() const {
  std::string out;
  for (const auto& c : children_) {
    if (c->exited) continue;
    if (!out.empty()) out += ", ";
    out += c->name.text();
  }
  return out;
}

void Supervisor::signal_group(int signo) {
  // Only while something of ours may still exist: once all is reaped the
  // group id is free and could name someone else's group.
  if (pgid_ > 0 && children_left_) kill(-pgid_, signo);
}

bool Supervisor::any_output_open() const {
  return std::any_of(children_.begin(), children_.end(), [](const auto& c) { return c->out || c->err; });
}

bool Supervisor::pump_while_stopping(const std::function<bool()>& pred, Clock::time_point deadline,
                                     bool interruptible) {
  while (!pred()) {
    if (Clock::now() >= deadline) return false;
    const Events events = poll_once(std::min(until(deadline), milliseconds(100)));
    if (!events.signals.empty()) interrupted_while_stopping_ = true;
    if (interruptible && !events.signals.empty()) return false;
  }
  return true;
}

void Supervisor::stop() {
  const auto none_left = [this] { return !children_left_; };
  if (children_left_) {
    signal_group(SIGTERM);
    if (!pump_while_stopping(none_left, Clock::now() + settings_.grace, true)) {
      signal_group(SIGKILL);
      pump_while_stopping(none_left, Clock::now() + settings_.kill_wait, false);
    }
  }
  // Output written just before the exits is still in the pipes.
  pump_while_stopping([this] { return !any_output_open(); }, Clock::now() + settings_.output_drain, false);
  for (auto& c : children_) {
    for (auto [fd, lines] : {std::pair{&c->out, c->out_lines.get()}, std::pair{&c->err, c->err_lines.get()}}) {
      if (*fd) {
        lines->finish();
        fd->reset();
      }
    }
  }
}

}  // namespace dt::dtrun
