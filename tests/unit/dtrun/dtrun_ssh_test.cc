// --launcher ssh without a network: the ssh and rsync command lines, the
// environment a remote process gets, the outcome messages, and the remote
// wrapper itself, run here by a local sh exactly as a remote login shell
// would run it, with a pipe for the ssh session's stdin. Every wait has a
// deadline; stray processes are SIGKILLed by group.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "dtrun_process.h"
#include "options.h"
#include "remote_command.h"
#include "ssh_launcher.h"

namespace dt::dtrun {
namespace {

using test::Clock;
using namespace std::chrono_literals;

// `sh -c line` with its stdin and stdout on pipes, as sshd runs a command.
class RemoteShell {
 public:
  explicit RemoteShell(const std::string& line, const char* login_shell = "/bin/sh") {
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) std::abort();
    pid_ = fork();
    if (pid_ == 0) {
      setsid();  // as sshd does for a session
      dup2(in[0], 0);
      dup2(out[1], 1);
      execl(login_shell, login_shell, "-c", line.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    close(in[0]);
    close(out[1]);
    stdin_ = in[1];
    stdout_ = out[0];
  }
  ~RemoteShell() {
    close_stdin();
    if (stdout_ >= 0) close(stdout_);
    if (pid_ > 0 && !status_) {
      kill(-pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    for (pid_t g : groups_) kill(-g, SIGKILL);
  }
  pid_t pid() const { return pid_; }
  void close_stdin() {
    if (stdin_ >= 0) close(stdin_);
    stdin_ = -1;
  }
  // The process groups to clean up should the test fail half-way.
  void track_group(pid_t g) { groups_.push_back(g); }

  // Reads stdout until `lines` complete lines arrived or the deadline.
  std::string read_lines(int lines, std::chrono::seconds limit) {
    const auto deadline = Clock::now() + limit;
    while (std::count(out_.begin(), out_.end(), '\n') < lines && Clock::now() < deadline) {
      pollfd p{stdout_, POLLIN, 0};
      if (poll(&p, 1, 50) <= 0) continue;
      char buf[4096];
      const ssize_t n = read(stdout_, buf, sizeof buf);
      if (n <= 0) break;
      out_.append(buf, static_cast<size_t>(n));
    }
    return out_;
  }
  std::optional<int> wait(std::chrono::seconds limit) {
    if (!status_) status_ = test::wait_for_exit(pid_, limit);
    return status_;
  }

 private:
  pid_t pid_ = -1;
  int stdin_ = -1;
  int stdout_ = -1;
  std::string out_;
  std::optional<int> status_;
  std::vector<pid_t> groups_;
};

// Live (not zombie) processes of process group `group` (or of the session
// `group` leads): the killed ones wait as zombies until whoever inherited
// them (init here, sshd's parent on a host) reaps them, which says nothing
// about the wrapper.
int live_members(pid_t group, bool session = false) {
  int live = 0;
  for (const auto& [pid, stat] : test::all_processes()) {
    if ((session ? stat.session : stat.pgrp) == group && stat.state != 'Z') ++live;
  }
  return live;
}

bool group_gone_within(pid_t group, std::chrono::milliseconds limit, bool session = false) {
  return test::wait_until([&] { return live_members(group, session) == 0; }, limit);
}

TEST(DtrunSsh, ShellQuoteSurvivesAnyText) {
  EXPECT_EQ(shell_quote("plain"), "'plain'");
  EXPECT_EQ(shell_quote(""), "''");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
  EXPECT_EQ(std::string(remote_wrapper_script()).find('\''), std::string::npos);
}

TEST(DtrunSsh, RemoteCommandSetsOnlyTheGivenEnvironmentAndDirectory) {
  const std::map<std::string, std::string> env = {
      {"DMLC_ROLE", "worker"}, {"ODD", "a b 'c' \"d\" $HOME `x` \\ ;|&"}, {"EMPTY", ""}};
  const std::string printer = "printf '%s|%s|%s|%s|%s\\n' \"$PWD\" \"$DMLC_ROLE\" \"$ODD\" \"${EMPTY-unset}\" \"$1\"";
  // The login shell parses the line: Debian's sh (dash) and bash.
  for (const char* login_shell : {"/bin/sh", "/bin/bash"}) {
    RemoteShell sh(remote_command("/", env, {"sh", "-c", printer, "sh", "arg with 'quotes' and $dollar"}),
                   login_shell);
    const std::string out = sh.read_lines(1, 20s);
    EXPECT_EQ(out, "/|worker|a b 'c' \"d\" $HOME `x` \\ ;|&||arg with 'quotes' and $dollar\n") << login_shell;
    const std::optional<int> status = sh.wait(20s);
    ASSERT_TRUE(status) << login_shell;
    EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << login_shell << " " << *status;
  }
}

TEST(DtrunSsh, RemoteExitStatusIsTheCommands) {
  RemoteShell sh(remote_command("/", {}, {"sh", "-c", "exit 7"}));
  const std::optional<int> status = sh.wait(20s);
  ASSERT_TRUE(status);
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 7) << *status;
}

TEST(DtrunSsh, RemoteCommandKilledBySignalReportsStatus128PlusIt) {
  RemoteShell sh(remote_command("/", {}, {"sh", "-c", "kill -9 $$"}));
  const std::optional<int> status = sh.wait(20s);
  ASSERT_TRUE(status);
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 128 + SIGKILL) << *status;
}

TEST(DtrunSsh, RemoteFailsWhenTheDirectoryIsMissing) {
  RemoteShell sh(remote_command("/nonexistent/dtrun", {}, {"true"}));
  const std::optional<int> status = sh.wait(20s);
  ASSERT_TRUE(status);
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) != 0) << *status;
}

// The command prints its process group, leaves children in it and waits.
std::string group_printer(bool ignore_term) {
  return std::string(ignore_term ? "trap '' TERM; " : "") +
         "sleep 300 & sleep 300 & echo $(cut -d' ' -f5 /proc/$$/stat); wait";
}

TEST(DtrunSsh, EndOfSessionStdinEndsTheWholeRemoteGroup) {
  RemoteShell sh(remote_command("/", {}, {"sh", "-c", group_printer(false)}));
  const std::string out = sh.read_lines(1, 20s);
  ASSERT_FALSE(out.empty()) << "the command did not start";
  const pid_t group = std::stoi(out);
  sh.track_group(group);
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(live_members(group), 3) << "the command and its two sleeps run while the session lasts";
  sh.close_stdin();
  const std::optional<int> status = sh.wait(20s);
  ASSERT_TRUE(status) << "the wrapper did not end after its stdin closed";
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 128 + SIGTERM) << *status;
  EXPECT_TRUE(group_gone_within(group, 5s)) << "processes of group " << group << " survived";
  // SIGKILLed helpers take a moment to die; a sleep would take 100 ms at least.
  EXPECT_TRUE(group_gone_within(sh.pid(), 50ms, true)) << "the wrapper's helpers survived";
}

TEST(DtrunSsh, ACommandThatIgnoresSigtermIsKilledAfterItsGrace) {
  RemoteShell sh(remote_command("/", {}, {"sh", "-c", group_printer(true)}));
  const std::string out = sh.read_lines(1, 20s);
  ASSERT_FALSE(out.empty()) << "the command did not start";
  const pid_t group = std::stoi(out);
  sh.track_group(group);
  const auto closed_at = Clock::now();
  sh.close_stdin();
  const std::optional<int> status = sh.wait(20s);
  ASSERT_TRUE(status) << "the wrapper did not end after its stdin closed";
  const double took = std::chrono::duration<double>(Clock::now() - closed_at).count();
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 128 + SIGKILL) << *status;
  EXPECT_GE(took, 4.0);
  EXPECT_LT(took, 15.0);
  EXPECT_TRUE(group_gone_within(group, 5s)) << "processes of group " << group << " survived";
}

TEST(DtrunSsh, AKilledWrapperShellTakesTheCommandWithIt) {
  RemoteShell sh(remote_command("/", {}, {"sh", "-c", group_printer(false)}));
  const std::string out = sh.read_lines(1, 20s);
  ASSERT_FALSE(out.empty()) << "the command did not start";
  const pid_t group = std::stoi(out);
  sh.track_group(group);
  ASSERT_EQ(kill(sh.pid(), SIGKILL), 0);
  const std::optional<int> status = sh.wait(20s);
  ASSERT_TRUE(status);
  EXPECT_TRUE(WIFSIGNALED(*status) && WTERMSIG(*status) == SIGKILL) << *status;
  // The poller looks once a second.
  EXPECT_TRUE(group_gone_within(group, 5s)) << "the command outlived its wrapper";
  // With the command gone, nothing holds the session's output open.
  EXPECT_EQ(sh.read_lines(2, 5s), out) << "output after the wrapper died";
}

TEST(DtrunSsh, LeftoversOfACommandThatEndedAreKilled) {
  RemoteShell sh(remote_command("/", {}, {"sh", "-c", "sleep 300 & echo $(cut -d' ' -f5 /proc/$$/stat)"}));
  const std::string out = sh.read_lines(1, 20s);
  ASSERT_FALSE(out.empty());
  const pid_t group = std::stoi(out);
  sh.track_group(group);
  const std::optional<int> status = sh.wait(20s);
  ASSERT_TRUE(status);
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << *status;
  EXPECT_TRUE(group_gone_within(group, 5s)) << "the command's background sleep survived";
  // SIGKILLed helpers take a moment to die; a sleep would take 100 ms at least.
  EXPECT_TRUE(group_gone_within(sh.pid(), 50ms, true)) << "the wrapper's helpers survived";
}

Options ssh_options(std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"-n", "2", "--launcher", "ssh", "-H", "hosts"};
  args.insert(args.end(), extra.begin(), extra.end());
  args.insert(args.end(), {"--", "train", "--epochs", "1"});
  return parse_options(args);
}

TEST(DtrunSsh, OptionsForTheSshLauncher) {
  const Options o = ssh_options({"--sync-dst-dir", "/tmp/job", "--ssh-config=/cfg", "--ssh-option",
                                 "Port=2222", "--ssh-option", "User alice"});
  EXPECT_EQ(o.launcher, Launcher::kSsh);
  EXPECT_EQ(o.hostfile, "hosts");
  EXPECT_EQ(o.sync_dst_dir, "/tmp/job");
  EXPECT_EQ(o.ssh_config, "/cfg");
  EXPECT_EQ(o.ssh_options, (std::vector<std::string>{"Port=2222", "User alice"}));
  EXPECT_EQ(parse_options({"-n", "1", "--launcher=ssh", "-Hh2", "--", "x"}).hostfile, "h2");
  EXPECT_EQ(parse_options({"-n", "1", "--launcher=ssh", "--hostfile", "h3", "--", "x"}).hostfile, "h3");
  EXPECT_THROW(parse_options({"-n", "1", "--launcher", "ssh", "--", "x"}), UsageError);
  EXPECT_THROW(parse_options({"-n", "1", "--ssh-option", "A=b", "--", "x"}), UsageError);
  EXPECT_THROW(ssh_options({"--ssh-option", "BatchMode"}), UsageError);
  EXPECT_THROW(ssh_options({"--ssh-option", "=yes"}), UsageError);
}

TEST(DtrunSsh, SshArgvIsNonInteractiveWithUserOptionsBeforeDefaults) {
  const Options o = ssh_options({"--ssh-config", "/my cfg", "--ssh-option", "StrictHostKeyChecking=yes"});
  SshHost host{"alice@node2", "node2", 2222};
  const std::vector<std::string> argv = ssh_argv(o, host, "CMD");
  const std::vector<std::string> expected = {
      "ssh", "-o", "BatchMode=yes", "-F", "/my cfg", "-o", "StrictHostKeyChecking=yes",
      "-o", "StrictHostKeyChecking=accept-new", "-o", "ConnectTimeout=20", "-o", "ServerAliveInterval=5",
      "-o", "ServerAliveCountMax=3", "-T", "-x", "-p", "2222", "alice@node2", "CMD"};
  EXPECT_EQ(argv, expected);
  // No terminal: -t would merge stderr into stdout.
  EXPECT_EQ(std::count(argv.begin(), argv.end(), "-t"), 0);
  const std::vector<std::string> plain = ssh_argv(ssh_options(), SshHost{"node3", "node3", 0}, "x");
  EXPECT_EQ(std::count(plain.begin(), plain.end(), "-p"), 0);
}

TEST(DtrunSsh, RsyncCopiesOverTheSameSsh) {
  const Options o = ssh_options({"--ssh-config", "/my cfg"});
  const std::vector<std::string> argv = rsync_argv(o, SshHost{"bob@node1", "node1", 23}, "/src/dir", "/dst dir");
  ASSERT_EQ(argv.size(), 8u);
  EXPECT_EQ(argv[0], "rsync");
  EXPECT_EQ(argv[1], "-az");
  EXPECT_EQ(argv[3], "-e");
  EXPECT_EQ(argv[4],
            "ssh -o BatchMode=yes -F '/my cfg' -o StrictHostKeyChecking=accept-new -o ConnectTimeout=20 "
            "-o ServerAliveInterval=5 -o ServerAliveCountMax=3 -T -x -p 23");
  EXPECT_EQ(argv[5], "--rsync-path=mkdir -p '/dst dir' && rsync");
  EXPECT_EQ(argv[6], "/src/dir/");
  EXPECT_EQ(argv[7], "bob@node1:/dst dir/");
  EXPECT_EQ(rsync_argv(o, SshHost{"fd00::7", "fd00::7", 0}, "/s", "/d").back(), "[fd00::7]:/d/");
  EXPECT_EQ(rsh_quote("it's"), "\"it's\"");
  EXPECT_THROW(rsh_quote("it's \"x\""), std::runtime_error);
}

TEST(DtrunSsh, RemoteEnvironmentIsDmlcForwardedAndEnvOnly) {
  const EnvMap inherited = {{"PATH", "/bin"}, {"HOME", "/root"}, {"SECRET", "x"}, {"PASSED", "from-shell"},
                            {"DMLC_INTERFACE", "eth9"}, {"DMLC_ROLE", "stale"}, {"OMP_NUM_THREADS", "4"},
                            {"LD_LIBRARY_PATH", "/opt/dt/lib"}, {"AWS_SECRET_ACCESS_KEY", "k"}};
  const Options o = ssh_options({"--env", "A=1", "--env", "PASSED", "--env-worker", "B=2", "--env-server", "C=3"});
  JobLayout layout;
  layout.root_uri = "10.0.0.1";
  layout.root_port = 9091;
  layout.num_servers = 2;
  layout.num_workers = 2;
  layout.port_file = "/tmp/port";
  layout.restart_count = 1;
  const EnvMap worker = remote_environment(inherited, o, layout, Role::kWorker, 1, LocalPlace{0, 1});
  const EnvMap expected = {{"A", "1"},
                           {"PASSED", "from-shell"},
                           {"B", "2"},
                           {"DMLC_ROLE", "worker"},
                           {"DMLC_PS_ROOT_URI", "10.0.0.1"},
                           {"DMLC_PS_ROOT_PORT", "9091"},
                           {"DMLC_NUM_SERVER", "2"},
                           {"DMLC_NUM_WORKER", "2"},
                           {"DMLC_WORKER_ID", "1"},
                           {"DT_RESTART_COUNT", "1"},  // the run of a job that --max-restarts restarted
                           // Its place among the workers of its host, as dtrun's and torchrun's.
                           {"DT_LOCAL_RANK", "0"},
                           {"DT_LOCAL_SIZE", "1"},
                           {"LOCAL_RANK", "0"},
                           {"LOCAL_WORLD_SIZE", "1"},
                           // What launch.py forwards from its shell; not the AWS keys.
                           {"DMLC_INTERFACE", "eth9"},
                           {"OMP_NUM_THREADS", "4"},
                           {"LD_LIBRARY_PATH", "/opt/dt/lib"}};
  EXPECT_EQ(worker, expected);
  layout.interface = "ib0";
  const EnvMap server = remote_environment(inherited, o, layout, Role::kServer, 0);
  EXPECT_EQ(server.at("DMLC_ROLE"), "server");
  EXPECT_EQ(server.at("C"), "3");
  EXPECT_EQ(server.at("DMLC_INTERFACE"), "ib0");  // --interface wins over the shell's
  EXPECT_EQ(server.at("OMP_NUM_THREADS"), "4");
  EXPECT_EQ(server.count("B"), 0u);
  EXPECT_EQ(server.count("DMLC_WORKER_ID"), 0u);
  EXPECT_EQ(server.count("DT_PS_PORT_FILE"), 0u);
}

TEST(DtrunSsh, EnvOverridesTheForwardedVariablesOnTheRemoteCommandLine) {
  const EnvMap inherited = {{"OMP_NUM_THREADS", "4"}, {"LD_LIBRARY_PATH", "/opt/dt/lib"}, {"KEEP", "here"}};
  const Options o = ssh_options({"--env", "OMP_NUM_THREADS=1", "--env-worker", "MXNET_KVSTORE_BIGARRAY_BOUND:1000"});
  JobLayout layout;
  layout.root_uri = "10.0.0.1";
  layout.root_port = 9091;
  layout.num_servers = 1;
  layout.num_workers = 1;
  const EnvMap env = remote_environment(inherited, o, layout, Role::kWorker, 0);
  EXPECT_EQ(env.at("OMP_NUM_THREADS"), "1");
  EXPECT_EQ(env.count("KEEP"), 0u);
  const std::string line = remote_command("/job", env, {"/bin/sh", "-c", "python train.py --lr 0.1"});
  for (const char* word : {"'DMLC_ROLE=worker'", "'DMLC_WORKER_ID=0'", "'DMLC_PS_ROOT_URI=10.0.0.1'",
                           "'LD_LIBRARY_PATH=/opt/dt/lib'", "'OMP_NUM_THREADS=1'",
                           "'MXNET_KVSTORE_BIGARRAY_BOUND=1000'", "'python train.py --lr 0.1'"}) {
    EXPECT_NE(line.find(std::string(" ") + word), std::string::npos) << word << " missing from " << line;
  }
  EXPECT_EQ(line.rfind("cd '/job' && exec env ", 0), 0u) << line;
}

TEST(DtrunSsh, RouteAddressToLoopbackIsLoopback) {
  EXPECT_EQ(route_address("127.0.0.1"), "127.0.0.1");
  EXPECT_THROW(route_address("no-such-host.invalid"), std::runtime_error);
}

TEST(DtrunSsh, OutcomesNameTheRemoteProcessAndHost) {
  const std::vector<RemoteProcess> remote = {{"server 0", "h1"}, {"worker 1", "alice@h2:2222"}};
  Outcome o = describe_remote_outcome({137, "worker 1 exited with status 137"}, remote);
  EXPECT_EQ(o.exit_code, 137);
  EXPECT_EQ(o.message, "worker 1 on alice@h2:2222 killed by signal 9 (Killed) (remote exit status 137)");
  o = describe_remote_outcome({3, "server 0 exited with status 3"}, remote);
  EXPECT_EQ(o.message, "server 0 on h1 exited with status 3");
  o = describe_remote_outcome({255, "server 0 exited with status 255"}, remote);
  EXPECT_NE(o.message.find("server 0 on h1: ssh exited with status 255"), std::string::npos) << o.message;
  o = describe_remote_outcome({143, "worker 1 killed by signal 15 (Terminated)"}, remote);
  EXPECT_EQ(o.message, "worker 1 (ssh to alice@h2:2222) killed by signal 15 (Terminated)");
  // Not a remote process, or one whose name only starts alike.
  for (const char* m : {"scheduler exited with status 1", "worker 10 exited with status 2",
                               "interrupted by SIGINT"}) {
    EXPECT_EQ(describe_remote_outcome({1, m}, remote).message, std::string(m));
  }
}

}  // namespace
}  // namespace dt::dtrun
