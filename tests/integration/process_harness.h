// Real processes for integration tests: fork/exec with a chosen environment
// (the caller's DMLC_* variables never leak in), stdout/stderr to files,
// bounded waits, and a fixture that kills whatever is still running when a
// test ends, so no test leaves processes behind.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace dt::test {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

struct Child {
  pid_t pid = -1;
  std::string out, err;  // files
  int status = -1;       // exit code once reaped; -1 while running
};

inline std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class JobProcesses : public ::testing::Test {
 protected:
  void TearDown() override {
    for (Child& c : children_) {
      if (c.status == -1 && c.pid > 0) {
        ::kill(c.pid, SIGKILL);
        ::waitpid(c.pid, nullptr, 0);
      }
    }
  }

  Child& spawn(const std::string& program, std::vector<std::string> args, const std::map<std::string, std::string>& env) {
    const std::string tag = std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + "-" +
                            std::to_string(children_.size());
    const char* tmp = std::getenv("TMPDIR");
    const std::string dir = tmp == nullptr ? "/tmp" : tmp;
    Child c;
    c.out = dir + "/ps-" + std::to_string(::getpid()) + "-" + tag + ".out";
    c.err = dir + "/ps-" + std::to_string(::getpid()) + "-" + tag + ".err";
    // Emptied here, not only by the child: a test that runs its job twice
    // reuses the names, and a wait for a child's output could otherwise
    // find the previous child's before the new one has started.
    for (const std::string* path : {&c.out, &c.err}) std::ofstream(*path, std::ios::trunc).flush();
    std::map<std::string, std::string> all;
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string kv = *e;
      const size_t eq = kv.find('=');
      if (eq != std::string::npos && kv.rfind("DMLC_", 0) != 0) all[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    for (const auto& kv : env) all[kv.first] = kv.second;
    std::vector<std::string> env_strings;
    for (const auto& kv : all) env_strings.push_back(kv.first + "=" + kv.second);
    std::vector<char*> envp, argv;
    for (auto& s : env_strings) envp.push_back(s.data());
    envp.push_back(nullptr);
    args.insert(args.begin(), program);
    for (auto& s : args) argv.push_back(s.data());
    argv.push_back(nullptr);
    const pid_t pid = ::fork();
    if (pid == 0) {
      if (!std::freopen(c.out.c_str(), "w", stdout) || !std::freopen(c.err.c_str(), "w", stderr)) _exit(126);
      ::execve(program.c_str(), argv.data(), envp.data());
      _exit(127);
    }
    c.pid = pid;
    children_.push_back(c);
    return children_.back();
  }

  // Waits for the child's exit; false after the deadline.
  static bool wait_exit(Child& c, std::chrono::milliseconds deadline) {
    const auto end = Clock::now() + deadline;
    while (Clock::now() < end) {
      int status = 0;
      if (::waitpid(c.pid, &status, WNOHANG) == c.pid) {
        c.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        return true;
      }
      std::this_thread::sleep_for(10ms);
    }
    return false;
  }

  static bool wait_output(const Child& c, const std::string& text, std::chrono::milliseconds deadline) {
    const auto end = Clock::now() + deadline;
    while (Clock::now() < end) {
      if (read_file(c.out).find(text) != std::string::npos) return true;
      std::this_thread::sleep_for(10ms);
    }
    return false;
  }

  static std::string dt_node() {
    const char* path = std::getenv("DT_NODE_BINARY");
    return path == nullptr ? std::string() : path;
  }

  // Starts the scheduler (dt-node) on a free tcp port; returns the port.
  std::string start_tcp_scheduler(std::map<std::string, std::string> env) {
    const std::string port_file = "/tmp/dt-ps-port-" + std::to_string(::getpid()) + "-" + std::to_string(children_.size());
    std::remove(port_file.c_str());
    env["DMLC_ROLE"] = "scheduler";
    env["DMLC_PS_ROOT_URI"] = "127.0.0.1";
    env["DMLC_PS_ROOT_PORT"] = "0";
    env["DT_PS_PORT_FILE"] = port_file;
    spawn(dt_node(), {}, env);
    const auto end = Clock::now() + 10s;
    while (Clock::now() < end) {
      const std::string port = read_file(port_file);
      if (!port.empty() && port.back() == '\n') {
        std::remove(port_file.c_str());
        return port.substr(0, port.size() - 1);
      }
      std::this_thread::sleep_for(10ms);
    }
    ADD_FAILURE() << "the scheduler did not report its port: " << read_file(children_.back().err);
    return "1";
  }

  std::vector<Child> children_;
};

// A job layout with deadlines short enough for tests: a lost peer is seen
// within heartbeat_timeout_s (killed processes at once, by their closed
// connections; the timeout only has to stay above how long a heartbeat can
// be delayed on two busy cores).
inline std::map<std::string, std::string> fast_job_env(int servers, int workers, const std::string& heartbeat_timeout_s) {
  return {{"DMLC_NUM_SERVER", std::to_string(servers)},
          {"DMLC_NUM_WORKER", std::to_string(workers)},
          {"DT_STARTUP_TIMEOUT_S", "20"},
          {"DT_REQUEST_TIMEOUT_S", "20"},
          {"DT_HEARTBEAT_INTERVAL_S", "0.2"},
          {"DT_HEARTBEAT_TIMEOUT_S", heartbeat_timeout_s},
          {"DT_SHUTDOWN_TIMEOUT_S", "5"}};
}

// This program's own path, for re-executing itself as a member process.
inline std::string self_executable() {
  char resolved[4096];
  const ssize_t n = ::readlink("/proc/self/exe", resolved, sizeof resolved - 1);
  if (n <= 0) return "/proc/self/exe";
  resolved[n] = '\0';
  return resolved;
}

// main() of a test program whose member processes are the program itself
// started with `member_flag`: runs member_main for them, the tests otherwise.
inline int member_or_tests(int argc, char** argv, const char* member_flag, int (*member_main)()) {
  if (argc > 1 && std::strcmp(argv[1], member_flag) == 0) return member_main();
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}

}  // namespace dt::test
