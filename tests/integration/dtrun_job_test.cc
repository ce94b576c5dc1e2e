// dtrun for real: whole jobs (scheduler, servers, workers as processes on
// loopback) started, watched and stopped by the dtrun binary. Workers are the
// Fashion-MNIST example or this program re-executed with --pushpull-worker
// (a dist_sync kvstore through the C API: one pushpull, or pushpulls until
// the job fails when DTRUN_TEST_HOLD=1). After every job the test checks
// that nothing of its process group is left. Every wait has a deadline; the
// fixture SIGKILLs whatever still runs.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "dt_c_api.h"

namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

std::string self_path;

std::string env_or_fail(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') {
    ADD_FAILURE() << name << " is not set (CTest sets it)";
    return "/nonexistent";
  }
  return v;
}

// The example sits in the build tree's examples/ beside dtrun (CTest can hand
// a discovered test only one environment variable reliably).
std::string example_binary() {
  const std::string dtrun = env_or_fail("DTRUN_BINARY");
  return dtrun.substr(0, dtrun.rfind('/') + 1) + "examples/train_fashion_mnist";
}

// The worker of the small jobs: rank r pushes r+1 under key 3 and pulls the sum.
int pushpull_worker() {
  dt_kvstore_options options;
  dt_kvstore_options_init(&options);
  dt_kvstore* kv = nullptr;
  dt_context* ctx = nullptr;
  dt_ndarray* value = nullptr;
  int rc = 1;
  int32_t rank = 0, workers = 0;
  const int64_t dims[1] = {4};
  const uint64_t key = 3;
  const bool hold = std::getenv("DTRUN_TEST_HOLD") != nullptr;
  float host[4];
  if (dt_kvstore_create_ex(&kv, "dist_sync", &options) != DT_OK || dt_kvstore_rank(&rank, kv) != DT_OK ||
      dt_kvstore_num_workers(&workers, kv) != DT_OK || dt_context_create(&ctx, DT_DEVICE_CPU, 0) != DT_OK ||
      dt_ndarray_create(&value, ctx, DT_FLOAT32, dims, 1) != DT_OK) {
    std::fprintf(stderr, "setup failed: %s\n", dt_last_error());
    goto done;
  }
  {
    const dt_ndarray* values[1] = {value};
    dt_ndarray* outs[1] = {value};
    if (dt_kvstore_init(kv, &key, values, 1) != DT_OK) goto failed;
    do {
      if (dt_ndarray_fill(value, rank + 1) != DT_OK || dt_kvstore_pushpull(kv, &key, values, outs, 1, 0) != DT_OK ||
          dt_ndarray_copy_to_host(host, sizeof host, value) != DT_OK) {
        goto failed;
      }
      if (hold) {
        static bool said = false;
        if (!said) std::printf("holding\n");
        said = true;
        std::fflush(stdout);
      }
    } while (hold);
    std::printf("pushpull_sum=%g\n", host[0]);
    rc = 0;
    goto done;
  }
failed:
  std::fprintf(stderr, "pushpull failed: %s\n", dt_last_error());
done:
  dt_ndarray_free(value);
  dt_context_free(ctx);
  dt_kvstore_free(kv);
  return rc;
}

// One dtrun run with its output in a file.
class DtrunProcess {
 public:
  DtrunProcess(const std::vector<std::string>& args, const std::string& output_path) : output_path_(output_path) {
    std::vector<std::string> argv{env_or_fail("DTRUN_BINARY")};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<char*> raw;
    for (auto& a : argv) raw.push_back(a.data());
    raw.push_back(nullptr);
    pid_ = fork();
    if (pid_ == 0) {
      const int fd = open(output_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(fd, 1);
      dup2(fd, 2);
      execv(raw[0], raw.data());
      _exit(127);
    }
  }
  ~DtrunProcess() {
    if (pid_ > 0 && !status_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (const std::optional<pid_t> g = group()) kill(-*g, SIGKILL);
    std::remove(output_path_.c_str());
  }

  pid_t pid() const { return pid_; }
  std::string output() const {
    std::ifstream in(output_path_);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  // The pid dtrun reported for "worker 1", "scheduler", ...
  std::optional<pid_t> pid_of(const std::string& name) const {
    std::smatch m;
    const std::string out = output();
    if (std::regex_search(out, m, std::regex("dtrun: " + name + " is pid ([0-9]+)"))) return std::stoi(m[1]);
    return std::nullopt;
  }
  // The scheduler, started first, leads the job's process group.
  std::optional<pid_t> group() const { return pid_of("scheduler"); }

  bool wait_for_output(const std::string& text, std::chrono::seconds limit) const {
    const auto deadline = Clock::now() + limit;
    while (Clock::now() < deadline) {
      if (output().find(text) != std::string::npos) return true;
      std::this_thread::sleep_for(20ms);
    }
    return false;
  }
  // The exit status, or nullopt when dtrun is still running at the deadline.
  std::optional<int> wait(std::chrono::seconds limit) {
    const auto deadline = Clock::now() + limit;
    while (!status_ && Clock::now() < deadline) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        status_ = status;
      } else {
        std::this_thread::sleep_for(20ms);
      }
    }
    return status_;
  }

 private:
  std::string output_path_;
  pid_t pid_ = -1;
  std::optional<int> status_;
};

std::string temp_path(const std::string& name) {
  const char* dir = std::getenv("TMPDIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/dtrun_job_test." + std::to_string(getpid()) + "." + name;
}

int exit_code(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : -1; }

void expect_group_empty(const DtrunProcess& job) {
  const std::optional<pid_t> group = job.group();
  ASSERT_TRUE(group) << job.output();
  errno = 0;
  EXPECT_EQ(kill(-*group, 0), -1) << "a process of group " << *group << " is still alive\n" << job.output();
  EXPECT_EQ(errno, ESRCH);
}

// Heartbeat bounds: a lost process must stop the job within seconds. A
// killed process is seen at once (its connections close); the timeout only
// catches hung ones, and must stay well above how long a heartbeat can be
// delayed when a dozen processes of these tests share two busy cores.
constexpr double kHeartbeatTimeoutS = 5;
const std::vector<std::string> kFastHeartbeats = {"--env", "DT_HEARTBEAT_INTERVAL_S=0.5", "--env",
                                                  "DT_HEARTBEAT_TIMEOUT_S=5"};

std::vector<std::string> training_job(int epochs) {
  std::vector<std::string> args = {"-n", "2", "-s", "2"};
  args.insert(args.end(), kFastHeartbeats.begin(), kFastHeartbeats.end());
  for (const char* a : {"--", ""}) args.push_back(a);
  args.back() = example_binary();
  for (const std::string& a : {std::string("--kvstore"), std::string("dist_sync"), std::string("--epochs"),
                               std::to_string(epochs), std::string("--batch-size"), std::string("32"),
                               std::string("--threads"), std::string("1")}) {
    args.push_back(a);
  }
  return args;
}

std::vector<std::string> pushpull_job(int workers, std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"-n", std::to_string(workers), "-s", "1"};
  args.insert(args.end(), kFastHeartbeats.begin(), kFastHeartbeats.end());
  args.insert(args.end(), extra.begin(), extra.end());
  for (const std::string& a : {std::string("--"), self_path, std::string("--pushpull-worker")}) args.push_back(a);
  return args;
}

TEST(DtrunJob, DistSyncTrainingEndsCleanlyWithAccurateModel) {
  const auto start = Clock::now();
  const std::string logs = temp_path("train-logs");
  std::vector<std::string> args = training_job(1);
  args.insert(args.begin(), {"--log-dir", logs});
  DtrunProcess job(args, temp_path("train"));
  const std::optional<int> status = job.wait(400s);
  ASSERT_TRUE(status) << "dtrun did not finish\n" << job.output();
  const std::string out = job.output();
  EXPECT_EQ(exit_code(*status), 0) << out;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(out, m, std::regex(R"(\[worker 0\] test_accuracy=([0-9.]+))"))) << out;
  EXPECT_GE(std::stod(m[1]), 0.80) << out;
  // The log file holds the raw lines, without prefixes.
  std::ifstream log(logs + "/worker-0.log");
  std::stringstream log_text;
  log_text << log.rdbuf();
  EXPECT_NE(log_text.str().find("\ntest_accuracy=" + m[1].str()), std::string::npos) << log_text.str();
  for (const char* name : {"scheduler", "server-0", "server-1", "worker-0", "worker-1"}) {
    std::remove((logs + "/" + name + ".log").c_str());
  }
  rmdir(logs.c_str());
  expect_group_empty(job);
  std::printf("training job took %.1f s\n", std::chrono::duration<double>(Clock::now() - start).count());
}

// Kills `name` with SIGKILL mid-epoch; dtrun must name it and stop the job
// within twice the heartbeat timeout.
void kill_mid_epoch_stops_job(const std::string& name, const std::string& output) {
  DtrunProcess job(training_job(5), temp_path(output));
  ASSERT_TRUE(job.wait_for_output("[worker 0] training lenet", 120s)) << job.output();
  std::this_thread::sleep_for(1s);  // into the epoch
  const std::optional<pid_t> victim = job.pid_of(name);
  ASSERT_TRUE(victim) << job.output();
  const auto killed_at = Clock::now();
  ASSERT_EQ(kill(*victim, SIGKILL), 0);
  const std::optional<int> status = job.wait(60s);
  ASSERT_TRUE(status) << "dtrun did not stop\n" << job.output();
  const double took = std::chrono::duration<double>(Clock::now() - killed_at).count();
  EXPECT_LT(took, 2 * kHeartbeatTimeoutS) << job.output();
  EXPECT_EQ(exit_code(*status), 128 + SIGKILL) << job.output();
  EXPECT_NE(job.output().find("dtrun: job failed: " + name + " killed by signal 9"), std::string::npos)
      << job.output();
  expect_group_empty(job);
  std::printf("%s killed: dtrun exited %.2f s later\n", name.c_str(), took);
}

TEST(DtrunJob, KilledWorkerStopsTheJobNamingIt) { kill_mid_epoch_stops_job("worker 1", "kill_worker"); }

TEST(DtrunJob, KilledServerStopsTheJobNamingIt) { kill_mid_epoch_stops_job("server 0", "kill_server"); }

TEST(DtrunJob, SigintStopsEverythingWithExitCode130) {
  DtrunProcess job(pushpull_job(2, {"--env-worker", "DTRUN_TEST_HOLD=1"}), temp_path("sigint"));
  ASSERT_TRUE(job.wait_for_output("[worker 1] holding", 60s)) << job.output();
  const auto sent_at = Clock::now();
  ASSERT_EQ(kill(job.pid(), SIGINT), 0);
  const std::optional<int> status = job.wait(20s);
  ASSERT_TRUE(status) << "dtrun did not stop\n" << job.output();
  const double took = std::chrono::duration<double>(Clock::now() - sent_at).count();
  EXPECT_LT(took, 5.0) << job.output();
  EXPECT_EQ(exit_code(*status), 130) << job.output();
  EXPECT_NE(job.output().find("job failed: interrupted by SIGINT"), std::string::npos) << job.output();
  expect_group_empty(job);
  std::printf("SIGINT: dtrun exited %.2f s later\n", took);
}

TEST(DtrunJob, TimeoutStopsTheJobWithExitCode124) {
  DtrunProcess job(pushpull_job(2, {"--env-worker", "DTRUN_TEST_HOLD=1", "--timeout", "3"}), temp_path("timeout"));
  const std::optional<int> status = job.wait(30s);
  ASSERT_TRUE(status) << "dtrun did not stop\n" << job.output();
  EXPECT_EQ(exit_code(*status), 124) << job.output();
  EXPECT_NE(job.output().find("job failed: timed out after 3 s"), std::string::npos) << job.output();
  expect_group_empty(job);
}

TEST(DtrunJob, FailingWorkerExitCodeIsTheJobs) {
  // A worker command that fails at once, before joining the job.
  DtrunProcess job({"-n", "2", "-s", "1", "--", "sh", "-c", "exit 3"}, temp_path("exit3"));
  const std::optional<int> status = job.wait(30s);
  ASSERT_TRUE(status) << "dtrun did not stop\n" << job.output();
  EXPECT_EQ(exit_code(*status), 3) << job.output();
  EXPECT_TRUE(std::regex_search(job.output(), std::regex("job failed: worker [01] exited with status 3")))
      << job.output();
  expect_group_empty(job);
}

TEST(DtrunJob, JobsStartedTogetherNeverCollideOnPorts) {
  constexpr int kJobs = 3;
  std::vector<std::unique_ptr<DtrunProcess>> jobs;
  for (int j = 0; j < kJobs; ++j) {
    jobs.push_back(std::make_unique<DtrunProcess>(pushpull_job(2), temp_path("concurrent" + std::to_string(j))));
  }
  for (auto& job : jobs) {
    const std::optional<int> status = job->wait(120s);
    ASSERT_TRUE(status) << "dtrun did not finish\n" << job->output();
    EXPECT_EQ(exit_code(*status), 0) << job->output();
    // Each worker pushes rank+1: 1 + 2 summed in its own job only.
    EXPECT_NE(job->output().find("[worker 0] pushpull_sum=3"), std::string::npos) << job->output();
    EXPECT_NE(job->output().find("[worker 1] pushpull_sum=3"), std::string::npos) << job->output();
    expect_group_empty(*job);
  }
}

}  // namespace

int main(int argc, char** argv) {
  self_path = argv[0];
  if (argc > 1 && std::strcmp(argv[1], "--pushpull-worker") == 0) return pushpull_worker();
  char resolved[4096];
  if (realpath(argv[0], resolved) != nullptr) self_path = resolved;
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
