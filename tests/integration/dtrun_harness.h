// The dtrun binary run for real by a test: started with its output in a
// file, watched through that output and /proc, and stopped with everything
// it started when the test ends, passed or not. Every wait has a deadline.
#pragma once

#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "dtrun_process.h"

namespace dt::test {

// CTest passes the binaries' paths in the environment.
inline std::string env_or_fail(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') {
    ADD_FAILURE() << name << " is not set (CTest sets it)";
    return "/nonexistent";
  }
  return v;
}

// Unique to this test process, so that tests running at once never share files.
inline std::string temp_path(const std::string& name) {
  const char* dir = std::getenv("TMPDIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/dtrun_test." + std::to_string(getpid()) + "." + name;
}

inline int exit_code(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : -1; }

// Heartbeat bounds: a lost process must stop the job within seconds. A
// killed process is seen at once (its connections close); the timeout only
// catches hung ones, and must stay well above how long a heartbeat can be
// delayed when a dozen processes of these tests share two busy cores.
constexpr double kHeartbeatTimeoutS = 5;
inline const std::vector<std::string> kFastHeartbeats = {"--env", "DT_HEARTBEAT_INTERVAL_S=0.5", "--env",
                                                         "DT_HEARTBEAT_TIMEOUT_S=5"};

// One dtrun run with its output in temp_path(name).
class DtrunProcess {
 public:
  DtrunProcess(const std::vector<std::string>& args, const std::string& name) : output_path_(temp_path(name)) {
    std::vector<std::string> argv{env_or_fail("DTRUN_BINARY")};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<char*> raw;
    for (auto& a : argv) raw.push_back(a.data());
    raw.push_back(nullptr);
    pid_ = fork();
    if (pid_ == 0) {
      const int fd = open(output_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(fd, 1);
      dup2(fd, 2);
      execv(raw[0], raw.data());
      _exit(127);
    }
  }
  // A test that failed half-way must not leave the job running: dtrun, its
  // process group, and what left that group (mpirun's ranks have groups of
  // their own).
  ~DtrunProcess() {
    if (pid_ > 0 && !status_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (const std::optional<pid_t> g = group()) kill(-*g, SIGKILL);
    for (pid_t p : seen_) {
      if (alive(p)) kill(p, SIGKILL);
    }
    std::remove(output_path_.c_str());
  }
  DtrunProcess(const DtrunProcess&) = delete;
  DtrunProcess& operator=(const DtrunProcess&) = delete;

  pid_t pid() const { return pid_; }
  std::string output() const {
    std::ifstream in(output_path_);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  // How often `text` stands in the output.
  int count(const std::string& text) const {
    const std::string out = output();
    int n = 0;
    for (size_t at = out.find(text); at != std::string::npos; at = out.find(text, at + 1)) ++n;
    return n;
  }
  // The pid dtrun reported for "worker 1", "scheduler", "mpirun", ...
  std::optional<pid_t> pid_of(const std::string& name) const {
    std::smatch m;
    const std::string out = output();
    if (std::regex_search(out, m, std::regex("dtrun: " + name + " is pid ([0-9]+)"))) return std::stoi(m[1]);
    return std::nullopt;
  }
  // The scheduler, started first, leads the job's process group.
  std::optional<pid_t> group() const { return pid_of("scheduler"); }

  bool wait_for_output(const std::string& text, std::chrono::seconds limit) const {
    return wait_until([&] { return output().find(text) != std::string::npos; }, limit);
  }
  // The wait status, or nullopt when dtrun is still running at the deadline.
  std::optional<int> wait(std::chrono::seconds limit) {
    if (!status_) status_ = wait_for_exit(pid_, limit);
    return status_;
  }

  // Every descendant of dtrun now; remembered for expect_nothing_left and
  // the destructor, since a process that left dtrun's group is found only so.
  std::set<pid_t> snapshot_descendants() {
    const std::map<pid_t, ProcStat> all = all_processes();
    std::set<pid_t> found{pid_};
    for (bool grew = true; grew;) {
      grew = false;
      for (const auto& [pid, stat] : all) {
        if (found.count(stat.ppid) && !found.count(pid)) grew = found.insert(pid).second;
      }
    }
    found.erase(pid_);
    seen_.insert(found.begin(), found.end());
    return found;
  }

  // Nothing of the job is left: its process group, and each process seen.
  void expect_nothing_left() const {
    const std::optional<pid_t> g = group();
    ASSERT_TRUE(g) << output();
    errno = 0;
    EXPECT_EQ(kill(-*g, 0), -1) << "a process of group " << *g << " is still alive\n" << output();
    EXPECT_EQ(errno, ESRCH);
    // Give init a moment to reap what dtrun left as orphans.
    wait_until([&] {
      for (pid_t p : seen_) {
        if (alive(p)) return false;
      }
      return true;
    }, 5s);
    for (pid_t p : seen_) EXPECT_FALSE(alive(p)) << "pid " << p << " of the job is still alive\n" << output();
  }

 private:
  std::string output_path_;
  pid_t pid_ = -1;
  std::optional<int> status_;
  std::set<pid_t> seen_;
};

// What the test did at `since` failed the job: dtrun must end within `limit`
// (and, where given, within `within_s` seconds of `since`) with exit code
// `code`, having said `message`, and leave nothing behind.
inline void expect_job_failed(DtrunProcess& job, std::chrono::seconds limit, int code, const std::string& message,
                              Clock::time_point since = Clock::now(), std::optional<double> within_s = std::nullopt) {
  const std::optional<int> status = job.wait(limit);
  ASSERT_TRUE(status) << "dtrun did not stop\n" << job.output();
  const double took = std::chrono::duration<double>(Clock::now() - since).count();
  if (within_s) {
    EXPECT_LT(took, *within_s) << job.output();
    std::printf("%s: dtrun exited %.2f s later\n", message.c_str(), took);
  }
  EXPECT_EQ(exit_code(*status), code) << job.output();
  EXPECT_NE(job.output().find(message), std::string::npos) << job.output();
  job.expect_nothing_left();
}

}  // namespace dt::test
