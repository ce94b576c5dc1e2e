// Processes in dtrun's tests, unit and integration alike: bounded polling
// (every wait has a deadline) and what /proc says about a process. Needs
// only the C++ and POSIX libraries, because dtrun's unit tests link dtrun's
// sources and not libdisttrain.
#pragma once

#include <dirent.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>

namespace dt::test {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// Polls `done` until it holds or `limit` passed, asking once more at the
// deadline so that a slow last poll still counts.
template <typename Done>
bool wait_until(Done done, std::chrono::milliseconds limit, std::chrono::milliseconds poll = 20ms) {
  const auto deadline = Clock::now() + limit;
  for (;;) {
    if (done()) return true;
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(poll);
  }
}

// Reaps the child `pid`: its wait status, or nullopt while it still runs at
// the deadline.
inline std::optional<int> wait_for_exit(pid_t pid, std::chrono::milliseconds limit) {
  int status = 0;
  if (wait_until([&] { return waitpid(pid, &status, WNOHANG) == pid; }, limit, 10ms)) return status;
  return std::nullopt;
}

struct ProcStat {
  char state = 0;  // 'Z' for a zombie
  pid_t ppid = 0;
  pid_t pgrp = 0;
  pid_t session = 0;
};

// /proc/<pid>/stat, or nullopt once the process is gone.
inline std::optional<ProcStat> proc_stat(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return std::nullopt;
  // "pid (comm) state ppid pgrp session ...": comm may hold spaces and
  // parentheses, so the fields start after the last ')'.
  const std::string::size_type close = line.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream fields(line.substr(close + 1));
  ProcStat s;
  if (!(fields >> s.state >> s.ppid >> s.pgrp >> s.session)) return std::nullopt;
  return s;
}

// Every process on this host.
inline std::map<pid_t, ProcStat> all_processes() {
  std::map<pid_t, ProcStat> out;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return out;
  while (const dirent* e = readdir(proc)) {
    const pid_t pid = static_cast<pid_t>(std::atoi(e->d_name));
    if (pid <= 0) continue;
    if (const std::optional<ProcStat> s = proc_stat(pid)) out[pid] = *s;
  }
  closedir(proc);
  return out;
}

// A killed process waits as a zombie until its parent (init, for the
// orphans of these tests) reaps it; as far as a test is concerned it is gone.
inline bool alive(pid_t pid) {
  const std::optional<ProcStat> s = proc_stat(pid);
  return s && s->state != 'Z';
}

}  // namespace dt::test
