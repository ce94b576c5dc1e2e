// soak_worker: one worker of the soak bench (bench/soak_bench.sh runs it
// under dtrun; issue 19). It inits K keys of mixed sizes on a dist_sync
// store, then pushpulls all of them round after round until a duration has
// passed, and checks every pulled sum, so the hours a soak runs also test
// that nothing is lost, doubled or crossed between keys or rounds.
//
//   soak_worker [--keys K] [--seconds S] [--interval-s I]
//
// Values are small integers (|v| <= 8 + rank), so every sum the servers
// make is exact in float32 whatever the order of addition, and each worker
// can tell the expected sum from the key, element and round alone.
//
// When to stop: one more key carries two floats per round, worker 0's stop
// vote (1 once S seconds have passed) and each worker's mismatch count. Its
// pulled sum reaches every worker in the same round, so all of them leave
// after that round together, with no extra barrier, and a mismatch on any
// worker stops the job and fails every worker.
//
// Worker 0 prints a JSON line every I seconds and a summary at the end;
// every worker writes its first mismatches to stderr.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/context.h"
#include "core/error.h"
#include "kvstore/kvstore_factory.h"
#include "ps/job/environment_options.h"

namespace {

using Clock = std::chrono::steady_clock;
using dt::core::NDArray;

// Most keys hold 16..1024 floats (log-uniform); one in a thousand holds
// 65536, so large messages are chunked and fused with small ones.
int64_t key_floats(uint64_t key) {
  if (key % 1000 == 999) return 65536;
  const uint32_t h = static_cast<uint32_t>(key) * 2654435761u;
  return int64_t{16} << ((h >> 16) % 7);
}

// A seed per key and round; element i's base value is in [-8, 7].
uint32_t seed(uint64_t key, int64_t round) {
  return static_cast<uint32_t>(key) * 2654435761u ^ static_cast<uint32_t>(round) * 2246822519u;
}
float base_value(uint32_t s, size_t i) {
  return static_cast<float>(static_cast<int>(((s + static_cast<uint32_t>(i) * 3266489917u) >> 28)) - 8);
}

// Worker w pushes base + w; the sum over n workers is n * base + n(n-1)/2,
// so a push counted twice or missing changes it.
void fill(NDArray& a, uint64_t key, int64_t round, int rank) {
  const uint32_t s = seed(key, round);
  float* x = a.data_as<float>();
  for (size_t i = 0; i < a.size(); ++i) x[i] = base_value(s, i) + static_cast<float>(rank);
}

// How many elements of out differ from the round's sum; the first few go to stderr.
size_t check(const NDArray& out, uint64_t key, int64_t round, int workers, int rank, size_t& reported) {
  const uint32_t s = seed(key, round);
  const float offset = static_cast<float>(workers * (workers - 1) / 2);
  const float* x = out.data_as<float>();
  size_t bad = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    const float want = static_cast<float>(workers) * base_value(s, i) + offset;
    if (x[i] == want) continue;
    ++bad;
    if (reported < 10) {
      ++reported;
      std::fprintf(stderr, "soak_worker %d: round %lld key %llu element %zu: got %g, want %g\n", rank,
                   static_cast<long long>(round), static_cast<unsigned long long>(key), i, x[i], want);
    }
  }
  return bad;
}

int usage() {
  std::fprintf(stderr, "usage: soak_worker [--keys K] [--seconds S] [--interval-s I]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  long keys_wanted = 10000;
  double seconds = 60;
  double interval_s = 30;
  for (int i = 1; i < argc; i += 2) {
    if (i + 1 >= argc) return usage();
    if (std::strcmp(argv[i], "--keys") == 0) keys_wanted = std::atol(argv[i + 1]);
    else if (std::strcmp(argv[i], "--seconds") == 0) seconds = std::atof(argv[i + 1]);
    else if (std::strcmp(argv[i], "--interval-s") == 0) interval_s = std::atof(argv[i + 1]);
    else return usage();
  }
  if (keys_wanted < 1 || seconds <= 0 || interval_s <= 0) return usage();
  try {
    auto kv = dt::kvstore::create_kvstore("dist_sync", dt::ps::ps_options_from_environment());
    const int rank = kv->rank();
    const int workers = kv->num_workers();
    auto cpu = dt::core::make_cpu_context();
    const auto k = static_cast<uint64_t>(keys_wanted);
    std::vector<uint64_t> keys;
    std::vector<NDArray> values, outs;
    size_t floats = 0;
    for (uint64_t key = 0; key <= k; ++key) {
      const int64_t n = key < k ? key_floats(key) : 2;
      keys.push_back(key);
      values.push_back(NDArray::zeros(cpu, dt::core::DType::kFloat32, {n}));
      outs.push_back(NDArray::zeros(cpu, dt::core::DType::kFloat32, {n}));
      floats += static_cast<size_t>(n);
    }
    kv->init(keys, values);
    kv->barrier();

    const auto start = Clock::now();
    const auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
    const dt::core::Traffic before = kv->traffic();
    size_t mismatches = 0;
    size_t reported = 0;
    double total_mismatches = 0;
    int64_t round = 0;
    int64_t last_round = 0;
    double last_report = 0;
    double next_report = interval_s;
    bool stop = false;
    while (!stop) {
      ++round;
      for (uint64_t key = 0; key < k; ++key) fill(values[key], key, round, rank);
      float* control = values[k].data_as<float>();
      control[0] = rank == 0 && elapsed() >= seconds ? 1.0f : 0.0f;
      control[1] = static_cast<float>(std::min<size_t>(mismatches, 1000000));
      kv->pushpull(keys, values, outs, 0);
      for (uint64_t key = 0; key < k; ++key) mismatches += check(outs[key], key, round, workers, rank, reported);
      const float* votes = outs[k].data_as<float>();
      total_mismatches = votes[1];
      stop = votes[0] > 0 || total_mismatches > 0;
      const double now = elapsed();
      if (rank == 0 && now >= next_report) {
        std::printf("{\"bench\":\"soak\",\"round\":%lld,\"elapsed_s\":%.1f,\"rounds_per_s\":%.3f}\n",
                    static_cast<long long>(round), now,
                    static_cast<double>(round - last_round) / std::max(now - last_report, 1e-9));
        std::fflush(stdout);
        last_round = round;
        last_report = now;
        while (next_report <= now) next_report += interval_s;
      }
    }
    const double took = elapsed();
    const dt::core::Traffic moved = kv->traffic() - before;
    // The vote of the last round counted mismatches up to the round before;
    // one more exchange of the control key alone counts the last round's too.
    std::vector<uint64_t> control_key{k};
    float* control = values[k].data_as<float>();
    control[0] = 0;
    control[1] = static_cast<float>(std::min<size_t>(mismatches, 1000000));
    kv->pushpull(control_key, {values[k]}, {outs[k]}, 0);
    total_mismatches = outs[k].data_as<float>()[1];
    if (rank == 0) {
      std::printf("{\"bench\":\"soak_summary\",\"workers\":%d,\"keys\":%llu,\"floats_per_push\":%zu,"
                  "\"rounds\":%lld,\"elapsed_s\":%.1f,\"rounds_per_s\":%.3f,\"bytes_sent_per_round\":%.0f,"
                  "\"bytes_received_per_round\":%.0f,\"mismatched_elements\":%.0f,\"correct\":%s}\n",
                  workers, static_cast<unsigned long long>(k), floats, static_cast<long long>(round), took,
                  static_cast<double>(round) / took, static_cast<double>(moved.bytes_sent) / round,
                  static_cast<double>(moved.bytes_received) / round, total_mismatches,
                  total_mismatches == 0 ? "true" : "false");
      std::fflush(stdout);
    }
    kv->barrier();
    return total_mismatches == 0 ? 0 : 1;
  } catch (const dt::core::Error& e) {
    std::fprintf(stderr, "soak_worker: %s\n", e.what());
    return 1;
  }
}
