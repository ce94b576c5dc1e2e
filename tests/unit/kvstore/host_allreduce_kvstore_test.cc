// The "allreduce" kvstore in jobs without servers: the scheduler runs on a
// thread over inproc://, the workers are this test's threads, and their
// gradients go worker to worker over the host communicator (ipc:// on this
// host). Inputs are small integers, exact in every order of summation,
// except where bit-identical results on every worker are the point.
// Gradient compression: host_allreduce_kvstore_compression_test.cc.
#include <gtest/gtest.h>

#include "host_allreduce_kvstore_test_util.h"

namespace dt::kvstore {
namespace {

using namespace host_allreduce_test;

TEST(HostAllreduceKVStore, WorkersStartFromWorkerZeroAndSumEveryPush) {
  static constexpr int kWorkers = 3;
  static constexpr size_t kCount = 100003;  // odd, and large enough for the ring
  run_workers(kWorkers, [](const test::ThreadedJob& job, int rank) {
    HostAllreduceKVStore kv(job.worker(rank), job.options());
    EXPECT_EQ(kv.type(), "allreduce");
    EXPECT_EQ(kv.rank(), rank);
    EXPECT_EQ(kv.num_workers(), kWorkers);
    kv.init({3, 4}, {floats(integers(rank, kCount)), floats({1.0f + static_cast<float>(rank), 2.0f})});
    NDArray out = floats(std::vector<float>(kCount, -1));
    NDArray small = floats({0, 0});
    kv.pull({3, 4}, {out, small}, 0);
    EXPECT_EQ(values_of(out), integers(0, kCount)) << "worker 0's init everywhere";
    EXPECT_EQ(values_of(small), (std::vector<float>{1, 2}));

    std::vector<float> expected(kCount, 0.0f);
    for (int r = 0; r < kWorkers; ++r) {
      const auto a = integers(10 + r, kCount), b = integers(20 + r, kCount);
      for (size_t i = 0; i < kCount; ++i) expected[i] += a[i] + b[i];
    }
    for (int round = 0; round < 2; ++round) {
      // Two values of key 3 on this worker, summed here, then across workers.
      NDArray a = floats(integers(10 + rank, kCount));
      NDArray b = floats(integers(20 + rank, kCount));
      NDArray s = floats({3.0f * static_cast<float>(rank + 1), 1.0f});
      kv.pushpull({3, 3, 4}, {a, b, s}, {a, b, s}, 0);
      EXPECT_EQ(values_of(a), expected) << "round " << round;
      EXPECT_EQ(values_of(b), expected) << "round " << round;
      EXPECT_EQ(values_of(s), (std::vector<float>{18.0f, 3.0f})) << "round " << round;
    }
    NDArray again = floats(std::vector<float>(kCount, -1));
    kv.pull({3}, {again}, 0);
    EXPECT_EQ(values_of(again), expected) << "pull returns the last sum";
    kv.barrier();
  });
}

TEST(HostAllreduceKVStore, ManySmallKeysFusedGiveEveryWorkerTheSameBits) {
  // Random floats: summation order matters, so equal bits on every worker
  // show that one order was used for everyone.
  static constexpr int kWorkers = 2;
  static constexpr int kKeys = 40;
  std::vector<std::vector<float>> results(kWorkers);
  run_workers(kWorkers, [&results](const test::ThreadedJob& job, int rank) {
    HostAllreduceKVStore kv(job.worker(rank), job.options());
    std::mt19937 gen(static_cast<uint32_t>(rank + 1));
    std::normal_distribution<float> dist(0.0f, 1.0f);
    std::vector<Key> keys;
    std::vector<NDArray> values;
    for (int k = 0; k < kKeys; ++k) {
      std::vector<float> v(static_cast<size_t>(1 + k * 37));
      for (float& x : v) x = dist(gen);
      keys.push_back(static_cast<Key>(k));
      values.push_back(floats(v));
    }
    kv.init(keys, values);
    kv.pushpull(keys, values, values, 0);
    for (const NDArray& v : values) {
      const auto host = values_of(v);
      results[static_cast<size_t>(rank)].insert(results[static_cast<size_t>(rank)].end(), host.begin(), host.end());
    }
  });
  ASSERT_FALSE(results[0].empty());
  EXPECT_EQ(results[0], results[1]);
}

TEST(HostAllreduceKVStore, AsyncPushesFillBucketsInPushOrderAndFinishEach) {
  // 64-byte buckets: keys of 4, 20 and 40 floats cut several buckets, one
  // key alone when it is larger than a bucket.
  static constexpr int kWorkers = 2;
  run_workers(kWorkers, [](const test::ThreadedJob& job, int rank) {
    HostAllreduceOptions tiny;
    tiny.bucket_bytes = 64;
    HostAllreduceKVStore kv(job.worker(rank), job.options(), tiny);
    EXPECT_TRUE(kv.communicates_asynchronously());
    const std::vector<size_t> sizes{4, 4, 20, 4, 40, 4, 4};
    std::vector<Key> keys;
    std::vector<NDArray> inits;
    for (size_t k = 0; k < sizes.size(); ++k) {
      keys.push_back(static_cast<Key>(100 + k));
      inits.push_back(floats(std::vector<float>(sizes[k], 0.0f)));
    }
    kv.init(keys, inits);
    for (int round = 0; round < 3; ++round) {
      std::vector<NDArray> grads;
      std::vector<std::shared_ptr<Completion>> done;
      for (size_t k = 0; k < sizes.size(); ++k) {
        grads.push_back(floats(integers(rank * 100 + static_cast<int>(k) + round, sizes[k])));
        done.push_back(kv.pushpull_async({keys[k]}, {grads[k]}, {grads[k]}, 0));
      }
      kv.wait(done[2]);  // waits for its bucket, sealing it if still open
      kv.wait_all();
      for (size_t k = 0; k < sizes.size(); ++k) {
        EXPECT_TRUE(done[k]->done()) << k;
        std::vector<float> expected(sizes[k], 0.0f);
        for (int r = 0; r < kWorkers; ++r) {
          const auto v = integers(r * 100 + static_cast<int>(k) + round, sizes[k]);
          for (size_t i = 0; i < sizes[k]; ++i) expected[i] += v[i];
        }
        EXPECT_EQ(values_of(grads[k]), expected) << "key " << keys[k] << " round " << round;
      }
    }
  });
}

TEST(HostAllreduceKVStore, RunsNoOptimizerAndTrainersUpdateOnTheWorkers) {
  run_workers(1, [](const test::ThreadedJob& job, int rank) {
    auto kv = std::make_shared<HostAllreduceKVStore>(job.worker(rank), job.options());
    EXPECT_FALSE(kv->accepts_optimizer());
    try {
      kv->set_optimizer(optim::OptimizerConfig("sgd").set("learning_rate", 0.1));
      ADD_FAILURE() << "set_optimizer worked";
    } catch (const core::Error& e) {
      EXPECT_EQ(e.code(), core::ErrorCode::kNotSupported);
      EXPECT_NE(std::string(e.what()).find("on the workers"), std::string::npos) << e.what();
    }
    auto net = std::make_shared<nn::Net>(nn::build_model_description_from_text("mlp", R"({"hidden": [8]})"), cpu());
    train::Trainer trainer(net, optim::OptimizerConfig("sgd").set("learning_rate", 0.1), kv);
    EXPECT_FALSE(trainer.update_on_kvstore());
  });
}

TEST(HostAllreduceKVStore, TwoWorkersTrainLikeOneNetOnTheWholeBatch) {
  // Each worker trains on its half of a batch. As in MXNet, a worker scales
  // its gradient by 1 / its own rows and the store sums across workers, so
  // two workers step as one net on the whole batch at twice the learning
  // rate (SGD with momentum is linear in lr * gradient), up to summation
  // order.
  constexpr int64_t kBatch = 16;
  std::vector<float> x(static_cast<size_t>(kBatch * 20));
  std::mt19937 gen(7);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  for (float& v : x) v = dist(gen);
  std::vector<int32_t> y(static_cast<size_t>(kBatch));
  for (int64_t i = 0; i < kBatch; ++i) y[static_cast<size_t>(i)] = static_cast<int32_t>(i % 4);
  const auto batch = [&](int64_t first, int64_t n) {
    NDArray data = NDArray::empty(cpu(), DType::kFloat32, Shape({n, 20}));
    data.copy_from_host(x.data() + first * 20, static_cast<size_t>(n * 20) * sizeof(float));
    NDArray labels = NDArray::empty(cpu(), DType::kInt32, Shape({n}));
    labels.copy_from_host(y.data() + first, static_cast<size_t>(n) * sizeof(int32_t));
    return std::make_pair(data, labels);
  };
  const auto make_net = [] {
    auto net = std::make_shared<nn::Net>(
        nn::build_model_description_from_text("mlp", R"({"input_shape": [20], "hidden": [16], "classes": 4})"), cpu());
    net->initialize(3);
    return net;
  };
  const auto sgd = optim::OptimizerConfig("sgd").set("learning_rate", 0.1).set("momentum", 0.9);
  auto single = make_net();
  train::Trainer single_trainer(single, optim::OptimizerConfig("sgd").set("learning_rate", 0.2).set("momentum", 0.9),
                                nullptr);
  for (int step = 0; step < 3; ++step) {
    const auto [d, l] = batch(0, kBatch);
    single_trainer.train_batch(d, l);
  }
  // Overlapped (buckets all-reduced during backward, small buckets so that
  // there are several) and not: the same buckets, so the same bits.
  const auto train_workers = [&](int overlap) {
    std::vector<std::vector<float>> weights(2);
    run_workers(2, [&](const test::ThreadedJob& job, int rank) {
      HostAllreduceOptions small_buckets;
      small_buckets.bucket_bytes = 1024;
      auto kv = std::make_shared<HostAllreduceKVStore>(job.worker(rank), job.options(), small_buckets);
      auto net = make_net();
      train::TrainerOptions options;
      options.overlap_communication = overlap;
      train::Trainer trainer(net, sgd, kv, options);
      for (int step = 0; step < 3; ++step) {
        const auto [d, l] = batch(rank * kBatch / 2, kBatch / 2);
        trainer.train_batch(d, l);
      }
      for (const nn::Parameter& p : net->parameters()) {
        const auto v = values_of(p.value);
        weights[static_cast<size_t>(rank)].insert(weights[static_cast<size_t>(rank)].end(), v.begin(), v.end());
      }
    });
    EXPECT_EQ(weights[0], weights[1]) << "every worker holds the same weights (overlap " << overlap << ")";
    return weights[0];
  };
  const std::vector<float> overlapped = train_workers(1);
  EXPECT_EQ(train_workers(0), overlapped);
  std::vector<std::vector<float>> weights{overlapped};
  std::vector<float> want;
  for (const nn::Parameter& p : single->parameters()) {
    const auto v = values_of(p.value);
    want.insert(want.end(), v.begin(), v.end());
  }
  ASSERT_EQ(want.size(), weights[0].size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(weights[0][i], want[i], 1e-5f + 1e-4f * std::fabs(want[i])) << i;
}

TEST(HostAllreduceKVStore, DifferentSizesAcrossWorkersAreAnErrorNotAHang) {
  test::ThreadedJob job(0, 2);
  std::vector<std::future<core::ErrorCode>> threads;
  for (int rank = 0; rank < 2; ++rank) {
    threads.push_back(std::async(std::launch::async, [&job, rank] {
      HostAllreduceKVStore kv(job.worker(rank), job.options());
      // Each worker's own key 1 has its own size: init broadcasts worker 0's
      // bytes, which worker 1 must refuse, not take in part.
      try {
        kv.init({1}, {floats(std::vector<float>(rank == 0 ? 10 : 12, 1.0f))});
        kv.pushpull({1}, {floats(std::vector<float>(rank == 0 ? 10 : 12, 1.0f))},
                    {floats(std::vector<float>(rank == 0 ? 10 : 12, 0.0f))}, 0);
      } catch (const core::Error& e) {
        return e.code();
      }
      return core::ErrorCode::kInternal;  // no error: the test fails below
    }));
  }
  for (auto& t : threads) ASSERT_EQ(t.wait_for(std::chrono::seconds(60)), std::future_status::ready) << "hung";
  for (auto& t : threads) {
    const core::ErrorCode code = t.get();
    EXPECT_TRUE(code == core::ErrorCode::kProtocol || code == core::ErrorCode::kPeerLost)
        << "error code " << static_cast<int>(code);
  }
}

TEST(HostAllreduceKVStore, TheKeysOfOneCallMayComeInAnyOrder) {
  run_workers(2, [](const test::ThreadedJob& job, int rank) {
    HostAllreduceKVStore kv(job.worker(rank), job.options());
    kv.init({1, 2}, {floats({0, 0}), floats({0, 0, 0})});
    NDArray a = floats({1, 1}), b = floats({2, 2, 2});
    if (rank == 0) {
      kv.pushpull({1, 2}, {a, b}, {a, b}, 0);
    } else {
      kv.pushpull({2, 1}, {b, a}, {b, a}, 0);
    }
    EXPECT_EQ(values_of(a), (std::vector<float>{2, 2}));
    EXPECT_EQ(values_of(b), (std::vector<float>{4, 4, 4}));
  });
}

TEST(HostAllreduceKVStore, CallsMadeInAnotherOrderAreAnErrorNamingTheKeys) {
  // Keys 1 and 2 have the same size, pushed by separate calls whose order
  // differs: without the keys in every call's header, worker 0's key 1
  // would be summed with worker 1's key 2. One-key buckets make each call
  // its own all-reduce.
  test::ThreadedJob job(0, 2);
  std::vector<std::future<std::string>> threads;
  for (int rank = 0; rank < 2; ++rank) {
    threads.push_back(std::async(std::launch::async, [&job, rank] {
      HostAllreduceOptions one_key;
      one_key.bucket_bytes = 4;
      HostAllreduceKVStore kv(job.worker(rank), job.options(), one_key);
      kv.init({1, 2}, {floats({1, 2, 3}), floats({4, 5, 6})});
      NDArray a = floats({1, 1, 1}), b = floats({2, 2, 2});
      try {
        if (rank == 0) {
          kv.pushpull_async({1}, {a}, {a}, 0);
          kv.pushpull_async({2}, {b}, {b}, 0);
        } else {
          kv.pushpull_async({2}, {b}, {b}, 0);
          kv.pushpull_async({1}, {a}, {a}, 0);
        }
        kv.wait_all();
      } catch (const core::Error& e) {
        return std::to_string(static_cast<int>(e.code())) + " " + e.what();
      }
      return std::string("no error");
    }));
  }
  for (auto& t : threads) ASSERT_EQ(t.wait_for(std::chrono::seconds(60)), std::future_status::ready) << "hung";
  const std::string protocol = std::to_string(static_cast<int>(core::ErrorCode::kProtocol)) + " ";
  for (int rank = 0; rank < 2; ++rank) {
    const std::string outcome = threads[static_cast<size_t>(rank)].get();
    EXPECT_EQ(outcome.rfind(protocol, 0), 0u) << outcome;
    EXPECT_NE(outcome.find(rank == 0 ? "keys 1 here" : "keys 2 here"), std::string::npos) << outcome;
    EXPECT_NE(outcome.find("same order"), std::string::npos) << outcome;
  }
}

TEST(HostAllreduceKVStore, TrafficIsWhatTheRingMoves) {
  // 2 workers, 1 MiB of float32: each sends and receives its half twice
  // (reduce-scatter, all-gather), 1 MiB in all, plus headers.
  static constexpr size_t kCount = 262144;
  run_workers(2, [](const test::ThreadedJob& job, int rank) {
    HostAllreduceKVStore kv(job.worker(rank), job.options());
    kv.init({1}, {floats(std::vector<float>(kCount, 0.0f))});
    const core::Traffic before = kv.traffic();
    NDArray g = floats(std::vector<float>(kCount, 1.0f));
    kv.pushpull({1}, {g}, {g}, 0);
    const core::Traffic moved = kv.traffic() - before;
    EXPECT_GE(moved.bytes_sent, kCount * sizeof(float));
    EXPECT_LE(moved.bytes_sent, kCount * sizeof(float) + 4096);
    EXPECT_GE(moved.bytes_received, kCount * sizeof(float));
    EXPECT_LE(moved.bytes_received, kCount * sizeof(float) + 4096);
  });
}

TEST(HostAllreduceKVStore, AWorkerThatLeavesIsNamedToTheOthers) {
  test::ThreadedJob job(0, 2);
  std::promise<void> left;
  auto leaver = std::async(std::launch::async, [&job, &left] {
    {
      HostAllreduceKVStore kv(job.worker(1), job.options());
      kv.init({1}, {floats({1, 2, 3})});
    }  // gone before the first push
    left.set_value();
  });
  auto stayer = std::async(std::launch::async, [&job, &left] {
    HostAllreduceKVStore kv(job.worker(0), job.options());
    kv.init({1}, {floats({1, 2, 3})});
    left.get_future().wait_for(std::chrono::seconds(30));
    NDArray v = floats({1, 2, 3});
    try {
      kv.pushpull({1}, {v}, {v}, 0);
      return std::string("no error");
    } catch (const core::Error& e) {
      return std::to_string(static_cast<int>(e.code())) + " " + e.what();
    }
  });
  ASSERT_EQ(stayer.wait_for(std::chrono::seconds(30)), std::future_status::ready) << "the remaining worker hung";
  const std::string outcome = stayer.get();
  leaver.get();
  EXPECT_EQ(outcome.rfind(std::to_string(static_cast<int>(core::ErrorCode::kPeerLost)) + " ", 0), 0u) << outcome;
  EXPECT_NE(outcome.find("1"), std::string::npos) << "names rank 1: " << outcome;
}

TEST(HostAllreduceKVStore, ItsNamesAndDistSyncRefusingAJobWithoutServers) {
  EXPECT_EQ(canonical_kvstore_type("AllReduce"), "allreduce");
  EXPECT_EQ(canonical_kvstore_type("horovod"), "allreduce");
  // Refused before joining: no scheduler is needed to see it.
  const ps::JobConfig job = test::inproc_job("inproc://no-scheduler-needed", ps::Role::kWorker, 0, 2, 0);
  try {
    DistKVStore kv("dist_sync", job, test::fast_options(), ps::data_transport_from_name("auto"), 0, nullptr);
    ADD_FAILURE() << "dist_sync joined a job without servers";
  } catch (const core::Error& e) {
    EXPECT_EQ(e.code(), core::ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("'allreduce'"), std::string::npos) << e.what();
  }
}

TEST(HostAllreduceKVStore, DtHierarchicalAllreduceIsZeroOrOne) {
  // Refused before anything else is read: no job is needed to see it.
  for (const char* bad : {"yes", "2", "on"}) {
    ::setenv("DT_HIERARCHICAL_ALLREDUCE", bad, 1);
    try {
      create_kvstore("allreduce");
      ADD_FAILURE() << "DT_HIERARCHICAL_ALLREDUCE=" << bad << " was accepted";
    } catch (const core::Error& e) {
      EXPECT_EQ(e.code(), core::ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find("DT_HIERARCHICAL_ALLREDUCE must be 0 or 1, not '" + std::string(bad) + "'"),
                std::string::npos)
          << e.what();
    }
  }
  ::unsetenv("DT_HIERARCHICAL_ALLREDUCE");
}

}  // namespace
}  // namespace dt::kvstore
