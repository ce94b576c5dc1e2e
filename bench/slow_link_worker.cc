// slow_link_worker: one worker of the slow-link compression bench
// (bench/slow_link_bench.sh starts it in a network namespace whose link tc
// shapes, beside dt-node's scheduler and server). Each step pushes
// ResNet-18's gradient set (44.7 MB of float32, one key per parameter)
// through a dist_sync kvstore with the given gradient compression and pulls
// the result back, as a trainer's step does, and times it; the bytes the
// worker's store sent and received are counted per step
// (KVStore::traffic()). Compute is left out on purpose: it costs the same
// for every mode, and on this machine's two cores it would hide the link.
//
//   slow_link_worker --compression SPEC [--steps N] [--update-on servers|workers]
//
// The job comes from the environment (DMLC_ROLE=worker, DMLC_PS_ROOT_URI,
// ...). update-on servers (default): the servers run sgd, so pulls are
// weights; workers: the servers sum, and pulls are the summed gradient.
// Rank 0 prints one JSON line; DT_BENCH_RATE (set by the driver) is copied
// into it.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/context.h"
#include "core/error.h"
#include "kvstore/kvstore_factory.h"
#include "optim/optimizer_config.h"
#include "resnet18_shapes.h"

namespace {

using Clock = std::chrono::steady_clock;
using dt::core::NDArray;

// Gradient-like values that change every step (so error feedback and top-k
// see new data each time), the same on every run.
void fill_gradients(std::vector<NDArray>& grads, int rank, int step) {
  uint32_t state = 2166136261u ^ static_cast<uint32_t>(rank * 7919 + step * 104729);
  for (NDArray& g : grads) {
    float* x = g.data_as<float>();
    for (size_t i = 0; i < g.size(); ++i) {
      state = state * 1664525u + 1013904223u;
      x[i] = (static_cast<float>(state >> 8) / 16777216.0f - 0.5f) * 0.02f;
    }
  }
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int usage() {
  std::fprintf(stderr, "usage: slow_link_worker --compression SPEC [--steps N] [--update-on servers|workers]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string spec = "none";
  std::string update_on = "servers";
  int steps = 5;
  for (int i = 1; i < argc; i += 2) {
    if (i + 1 >= argc) return usage();
    if (std::strcmp(argv[i], "--compression") == 0) spec = argv[i + 1];
    else if (std::strcmp(argv[i], "--steps") == 0) steps = std::atoi(argv[i + 1]);
    else if (std::strcmp(argv[i], "--update-on") == 0) update_on = argv[i + 1];
    else return usage();
  }
  if (steps < 1 || (update_on != "servers" && update_on != "workers")) return usage();
  try {
    auto kv = dt::kvstore::create_kvstore("dist_sync");
    auto cpu = dt::core::make_cpu_context();
    std::vector<uint64_t> keys;
    std::vector<NDArray> grads, outs;
    size_t total = 0;
    for (const auto& shape : resnet18_shapes()) {
      keys.push_back(keys.size());
      grads.push_back(NDArray::zeros(cpu, dt::core::DType::kFloat32, shape));
      outs.push_back(NDArray::zeros(cpu, dt::core::DType::kFloat32, shape));
      total += grads.back().nbytes();
    }
    kv->set_gradient_compression(spec);
    if (update_on == "servers") {
      kv->set_optimizer(dt::optim::OptimizerConfig("sgd").set("learning_rate", 0.01));
    }
    kv->init(keys, grads);
    // One untimed step: connections and server buffers are warm.
    fill_gradients(grads, kv->rank(), 0);
    kv->pushpull(keys, grads, outs, 0);
    kv->barrier();
    std::vector<double> seconds;
    const dt::core::Traffic before = kv->traffic();
    for (int s = 1; s <= steps; ++s) {
      fill_gradients(grads, kv->rank(), s);
      const auto start = Clock::now();
      kv->pushpull(keys, grads, outs, 0);
      seconds.push_back(std::chrono::duration<double>(Clock::now() - start).count());
    }
    const dt::core::Traffic moved = kv->traffic() - before;
    if (kv->rank() == 0) {
      const char* rate = std::getenv("DT_BENCH_RATE");
      std::printf("{\"bench\":\"slow_link\",\"rate\":\"%s\",\"compression\":\"%s\",\"update_on\":\"%s\","
                  "\"workers\":%d,\"gradient_bytes\":%zu,\"steps\":%d,\"step_ms\":%.1f,\"mean_step_ms\":%.1f,"
                  "\"bytes_sent_per_step\":%.0f,\"bytes_received_per_step\":%.0f}\n",
                  rate ? rate : "unshaped", spec.c_str(), update_on.c_str(), kv->num_workers(), total, steps,
                  median(seconds) * 1e3,
                  [&] {
                    double t = 0;
                    for (double x : seconds) t += x;
                    return t / static_cast<double>(seconds.size()) * 1e3;
                  }(),
                  static_cast<double>(moved.bytes_sent) / steps, static_cast<double>(moved.bytes_received) / steps);
      std::fflush(stdout);
    }
    kv->barrier();
    return 0;
  } catch (const dt::core::Error& e) {
    std::fprintf(stderr, "slow_link_worker: %s\n", e.what());
    return 1;
  }
}
