// The workers' side and the check of the jobs that lose a node on purpose
// (worker_loss_test, server_replication_test): every worker pushes the value
// (rank + 1) into every element of its keys each round, and the servers run
// sgd with learning rate 1, so every weight ends at init minus the sum of
// what the rounds added up to, exactly in float32. A push lost leaves a rank's
// value behind; a push counted twice takes it off again.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "core/context.h"
#include "core/error.h"
#include "core/ndarray.h"
#include "kvstore/kvstore.h"
#include "optim/optimizer_config.h"
#include "process_harness.h"

namespace dt::test {

struct RankSumKeys {
  std::vector<uint64_t> keys;
  std::vector<core::NDArray> values;  // what this worker pushes: rank + 1 everywhere
  std::vector<core::NDArray> outs;    // where pulls land
};

// Sets sgd with learning rate 1 on kv, initialises keys 0, 1, ... of the
// given sizes with init everywhere, and returns them with this worker's push
// values.
inline RankSumKeys init_rank_sum_keys(kvstore::KVStore& kv, const std::vector<int64_t>& sizes, float init) {
  auto cpu = core::make_cpu_context();
  RankSumKeys k;
  for (size_t i = 0; i < sizes.size(); ++i) {
    k.keys.push_back(i);
    core::NDArray value = core::NDArray::empty(cpu, core::DType::kFloat32, core::Shape({sizes[i]}));
    float* x = value.data_as<float>();
    for (int64_t j = 0; j < sizes[i]; ++j) x[j] = init;
    k.values.push_back(value);
    k.outs.push_back(core::NDArray::zeros(cpu, core::DType::kFloat32, core::Shape({sizes[i]})));
  }
  kv.set_optimizer(optim::OptimizerConfig("sgd").set("learning_rate", 1.0));
  kv.init(k.keys, k.values);
  for (core::NDArray& v : k.values) {
    float* x = v.data_as<float>();
    for (size_t i = 0; i < v.size(); ++i) x[i] = static_cast<float>(kv.rank() + 1);
  }
  return k;
}

// After the rounds: a barrier, the final pull, and its weights written to
// DT_TEST_OUT.<rank>, one number per line, for the test process to read.
// Returns the worker's exit code, 0.
inline int finish_rank_sum_worker(kvstore::KVStore& kv, RankSumKeys& k) {
  kv.barrier();
  kv.pull(k.keys, k.outs, 0);
  std::ofstream out(std::getenv("DT_TEST_OUT") + std::string(".") + std::to_string(kv.rank()));
  for (const core::NDArray& o : k.outs) {
    for (size_t i = 0; i < o.size(); ++i) out << o.data_as<float>()[i] << "\n";
  }
  return 0;
}

// A worker that failed: says why, and exits 3 for a lost peer, 5 otherwise.
inline int rank_sum_worker_failed(const core::Error& e) {
  std::cerr << "worker failed: " << e.what() << std::endl;
  return e.code() == core::ErrorCode::kPeerLost ? 3 : 5;
}

// Every one of the count weights that finish_rank_sum_worker() left in path is
// expected; the file is removed.
inline void expect_weights_file(const std::string& path, size_t count, float expected, const std::string& who) {
  const std::string text = read_file(path);
  std::remove(path.c_str());
  size_t read = 0;
  size_t wrong = 0;
  for (size_t start = 0; start < text.size();) {
    const size_t end = text.find('\n', start);
    if (std::stof(text.substr(start, end - start)) != expected) ++wrong;
    ++read;
    start = end + 1;
  }
  EXPECT_EQ(read, count) << who;
  EXPECT_EQ(wrong, 0u) << who << ": weights differ from " << expected;
}

}  // namespace dt::test
