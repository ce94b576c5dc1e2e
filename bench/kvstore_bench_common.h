// What kvstore_bench's driver (kvstore_bench.cc) and its worker processes
// (kvstore_bench_worker.cc) share: the sizes, repetitions and timings, and
// the JSON line each measurement prints.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "../tests/tls_test_certs.h"
#include "resnet18_shapes.h"
#include "core/context.h"
#include "core/error.h"
#include "kvstore/kvstore_factory.h"
#include "ps/job/environment_options.h"
#include "nn/model_builders.h"
#include "nn/net.h"
#include "optim/optimizer_config.h"
#include "train/trainer.h"

namespace kvstore_bench {

using Clock = std::chrono::steady_clock;
using dt::core::NDArray;

inline double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Small messages take tens of microseconds: enough repetitions that the
// figure is not one scheduler hiccup.
inline int repetitions(size_t bytes) {
  return bytes <= (64u << 10) ? 500 : bytes <= (1u << 20) ? 50 : bytes <= (16u << 20) ? 10 : 4;
}

inline constexpr size_t kSizes[] = {size_t{4} << 10, size_t{64} << 10, size_t{1} << 20, size_t{16} << 20, size_t{64} << 20};

// --max-bytes, passed to the workers as DT_BENCH_MAX_BYTES.
inline size_t max_bytes_from_env() {
  const char* text = std::getenv("DT_BENCH_MAX_BYTES");
  return text ? static_cast<size_t>(std::strtoull(text, nullptr, 10)) : kSizes[4];
}

// Per-repetition times; the line reports the median (this machine's
// scheduler makes a few repetitions very slow, and a mean would report them)
// and the mean beside it.
struct Timings {
  std::vector<double> seconds;
  Clock::time_point started;
  void start() { started = Clock::now(); }
  void stop() { seconds.push_back(seconds_since(started)); }
  double median() const {
    std::vector<double> sorted = seconds;
    std::sort(sorted.begin(), sorted.end());
    const size_t n = sorted.size();
    return n % 2 == 1 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
  }
  double mean() const {
    double total = 0;
    for (double s : seconds) total += s;
    return total / static_cast<double>(seconds.size());
  }
};

// DT_SERVER_REPLICATION as the job runs it: 0 or 1.
inline int replication_from_env() {
  const char* value = std::getenv("DT_SERVER_REPLICATION");
  return value != nullptr && std::strcmp(value, "1") == 0 ? 1 : 0;
}

inline void print(const char* op, size_t bytes, int servers, int workers, const std::string& transport, const Timings& t,
           const char* what = nullptr) {
  // pushpull and the raw baseline move the bytes twice (there and back).
  const bool both_ways = std::strcmp(op, "pushpull") == 0 || std::strcmp(op, "raw_tcp") == 0;
  const double secs_per_op = t.median();
  const double gbps = (both_ways ? 2.0 : 1.0) * double(bytes) / secs_per_op / 1e9;
  std::printf("{\"op\":\"%s\",\"bytes\":%zu,\"servers\":%d,\"workers\":%d,\"transport\":\"%s\",%s%s%s\"gbps\":%.3f,"
              "\"latency_us\":%.1f,\"mean_us\":%.1f,\"reps\":%zu,\"replication\":%d}\n",
              op, bytes, servers, workers, transport.c_str(), what ? "\"set\":\"" : "", what ? what : "",
              what ? "\"," : "", gbps, secs_per_op * 1e6, t.mean() * 1e6, t.seconds.size(), replication_from_env());
  std::fflush(stdout);
}

// The worker processes (kvstore_bench_worker.cc): --worker measures the
// kvstore operations, --train-worker whole training steps.
int worker_main();
int train_worker_main();

}  // namespace kvstore_bench
