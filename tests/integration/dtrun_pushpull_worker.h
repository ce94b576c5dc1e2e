// The worker of dtrun's small jobs: the test binary re-executed with
// --pushpull-worker joins a dist_sync kvstore through the C API, where rank r
// pushes r+1 under key 3 and pulls the sum. With DTRUN_TEST_HOLD set it
// pushes on until the job fails, for tests that stop a running job. Apart
// from dtrun_harness.h because it needs libdisttrain.
#pragma once

#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "dt_c_api.h"
#include "dtrun_harness.h"

namespace dt::test {

// This binary, absolute, for dtrun to start as the worker.
inline std::string self_path;

// Prints "holding rank=R pid=P" once it pushes on (tests kill that pid),
// else "pushpull_sum=S rank=R workers=N" at the end. DTRUN_TEST_ROUNDS=K:
// K pushpulls, each of which must give the exact sum (else it fails);
// DTRUN_TEST_SLOW_RANK=R: that worker sleeps 5 ms before each, so the others
// wait for it. DTRUN_TEST_LEAVE_RANK=R with DTRUN_TEST_LEAVE_AFTER=K: that
// worker kills itself (SIGKILL) after K rounds, and the others expect the
// rounds after it to sum without its R+1 (DT_WORKER_LOSS=continue).
inline int pushpull_worker() {
  dt_kvstore_options options;
  dt_kvstore* kv = nullptr;
  dt_context* ctx = nullptr;
  dt_ndarray* value = nullptr;
  int rc = 1;
  int32_t rank = 0, workers = 0;
  const int64_t dims[1] = {4};
  const uint64_t key = 3;
  const bool hold = std::getenv("DTRUN_TEST_HOLD") != nullptr;
  const char* rounds_text = std::getenv("DTRUN_TEST_ROUNDS");
  const int rounds = rounds_text != nullptr ? std::atoi(rounds_text) : 1;
  int round = 0;
  const char* slow_text = std::getenv("DTRUN_TEST_SLOW_RANK");
  const int slow_rank = slow_text != nullptr ? std::atoi(slow_text) : -1;
  const char* leave_text = std::getenv("DTRUN_TEST_LEAVE_RANK");
  const int leave_rank = leave_text != nullptr ? std::atoi(leave_text) : -1;
  const char* leave_after_text = std::getenv("DTRUN_TEST_LEAVE_AFTER");
  const int leave_after = leave_after_text != nullptr ? std::atoi(leave_after_text) : 0;
  float host[4];
  if (dt_kvstore_options_init(&options, sizeof options) != DT_OK ||
      dt_kvstore_create_ex(&kv, "dist_sync", &options) != DT_OK || dt_kvstore_rank(&rank, kv) != DT_OK ||
      dt_kvstore_num_workers(&workers, kv) != DT_OK || dt_context_create(&ctx, DT_DEVICE_CPU, 0) != DT_OK ||
      dt_ndarray_create(&value, ctx, DT_FLOAT32, dims, 1) != DT_OK) {
    std::fprintf(stderr, "setup failed: %s\n", dt_last_error());
    goto done;
  }
  {
    const dt_ndarray* values[1] = {value};
    dt_ndarray* outs[1] = {value};
    if (dt_kvstore_init(kv, &key, values, 1) != DT_OK) goto failed;
    bool said = false;
    do {
      if (rank == slow_rank) usleep(5000);
      if (dt_ndarray_fill(value, rank + 1) != DT_OK || dt_kvstore_pushpull(kv, &key, values, outs, 1, 0) != DT_OK ||
          dt_ndarray_copy_to_host(host, sizeof host, value) != DT_OK) {
        goto failed;
      }
      const int expected = workers * (workers + 1) / 2 - (leave_rank >= 0 && round >= leave_after ? leave_rank + 1 : 0);
      if (host[0] != static_cast<float>(expected)) {
        std::fprintf(stderr, "round %d: pushpull_sum=%g, not %d\n", round, host[0], expected);
        goto done;
      }
      if (rank == leave_rank && round + 1 == leave_after) {
        std::printf("leaving rank=%d\n", rank);
        std::fflush(stdout);
        kill(getpid(), SIGKILL);
      }
      if (hold && !said) {
        std::printf("holding rank=%d pid=%d\n", rank, static_cast<int>(getpid()));
        std::fflush(stdout);
        said = true;
      }
    } while (hold || ++round < rounds);
    std::printf("pushpull_sum=%g rank=%d workers=%d\n", host[0], rank, workers);
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

// dtrun's arguments for a pushpull job: `layout` (launcher, -n, -s), fast
// heartbeats, `extra`, then this binary as the worker.
inline std::vector<std::string> pushpull_job(std::vector<std::string> layout,
                                             const std::vector<std::string>& extra = {}) {
  layout.insert(layout.end(), kFastHeartbeats.begin(), kFastHeartbeats.end());
  layout.insert(layout.end(), extra.begin(), extra.end());
  for (const std::string& a : {std::string("--"), self_path, std::string("--pushpull-worker")}) layout.push_back(a);
  return layout;
}

// main() of a test binary that doubles as the worker.
inline int pushpull_worker_or_tests(int argc, char** argv) {
  self_path = argv[0];
  if (argc > 1 && std::strcmp(argv[1], "--pushpull-worker") == 0) return pushpull_worker();
  char resolved[PATH_MAX];
  if (realpath(argv[0], resolved) != nullptr) self_path = resolved;
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}

}  // namespace dt::test
