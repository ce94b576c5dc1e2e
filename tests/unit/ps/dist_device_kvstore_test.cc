// dist_sync_device / dist_async_device without a GPU: DistKVStore with a
// device merge whose merge context is the CPU runs every step of the device
// path (sum onto the merge context, one copy to the host, one copy back and
// a broadcast to the outputs) against a real scheduler and servers, and
// must give bit for bit what dist_sync gives on the same inputs. The merge
// on a real GPU is covered by tests/gpu/dist_device_kvstore_gpu_test.cc.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "core/context.h"
#include "core/error.h"
#include "core/ndarray.h"
#include "kvstore/dist_kvstore.h"
#include "kvstore/worker_merge.h"
#include "unit/ps/dist_device_arrays.h"
#include "unit/ps/dist_device_job.h"

namespace dt::kvstore {
namespace {

using core::Error;
using core::ErrorCode;
using core::NDArray;
using namespace std::chrono_literals;

// Above the 4096-byte bound below: split across both servers.
constexpr int64_t kBig = 1500;

NDArray array(const std::vector<float>& v) { return test::float_array(core::make_cpu_context(), v); }
std::vector<float> values(const NDArray& a) { return test::floats_of(a); }

// Fractions whose sums round differently in another order, so that a merge
// that adds in another order than dist_sync shows.
std::vector<float> fractions(int seed, int64_t count) {
  std::vector<float> v(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) v[i] = 1.0f / static_cast<float>(3 + (i * 7 + seed * 13) % 101) * (seed % 2 ? -1 : 1);
  return v;
}

std::unique_ptr<DistKVStore> make_store(const std::string& type, const test::ThreadedJob& job, int rank) {
  std::unique_ptr<WorkerMerge> merge;
  if (type.find("_device") != std::string::npos) merge = WorkerMerge::on_device(core::make_cpu_context());
  return std::make_unique<DistKVStore>(type, job.worker(rank), job.options(), ps::DataTransport::kAuto, 0,
                                       std::move(merge));
}

// Worker `rank`'s rounds: three values under a small key and two under a big
// one per pushpull (outputs listed several times per key too), then a pull;
// returns every output after every round.
std::vector<std::vector<float>> run_rounds(KVStore& kv, int rank) {
  kv.init({1, 2}, {array(fractions(100 + rank, 5)), array(fractions(200 + rank, kBig))});
  std::vector<std::vector<float>> seen;
  for (int round = 0; round < 3; ++round) {
    const int seed = rank * 1000 + round * 10;
    std::vector<NDArray> small{array(fractions(seed, 5)), array(fractions(seed + 1, 5)), array(fractions(seed + 2, 5))};
    std::vector<NDArray> big{array(fractions(seed + 3, kBig)), array(fractions(seed + 4, kBig))};
    // In place, as a trainer pushpulls its gradients.
    kv.pushpull({1, 2, 1, 1, 2}, {small[0], big[0], small[1], small[2], big[1]},
                {small[0], big[0], small[1], small[2], big[1]}, 0);
    for (const NDArray& a : small) seen.push_back(values(a));
    for (const NDArray& a : big) seen.push_back(values(a));
    NDArray p = array(std::vector<float>(5, -1)), q = array(std::vector<float>(5, -2));
    kv.pull({1, 1}, {p, q}, 0);
    seen.push_back(values(p));
    seen.push_back(values(q));
  }
  kv.barrier();
  return seen;
}

// Both workers' outputs for a 2-server, 2-worker job of type.
std::vector<std::vector<float>> run_job(const std::string& type) {
  test::ThreadedJob job(2, 2, test::fast_options(4096));
  auto worker = [&](int rank) {
    auto kv = make_store(type, job, rank);
    EXPECT_EQ(kv->type(), type);
    return run_rounds(*kv, rank);
  };
  auto w0 = std::async(std::launch::async, worker, 0);
  auto w1 = std::async(std::launch::async, worker, 1);
  EXPECT_EQ(w0.wait_for(60s), std::future_status::ready);
  EXPECT_EQ(w1.wait_for(60s), std::future_status::ready);
  auto seen = w0.get();
  for (auto& v : w1.get()) seen.push_back(std::move(v));
  for (const auto& outcome : job.outcomes()) EXPECT_EQ(outcome, "");
  return seen;
}

bool bitwise_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST(DistDeviceKVStore, DeviceMergeGivesDistSyncsResultsBitForBit) {
  const auto host = run_job("dist_sync");
  const auto device = run_job("dist_sync_device");
  ASSERT_EQ(host.size(), device.size());
  for (size_t i = 0; i < host.size(); ++i) EXPECT_TRUE(bitwise_equal(host[i], device[i])) << "output " << i;
  // And both are the sum over workers (rank order) of each worker's sum
  // (listed order): round 0's small key, element 0.
  float sum = 0;
  for (int rank = 0; rank < 2; ++rank) {
    const int seed = rank * 1000;
    float local = fractions(seed, 5)[0];
    local += fractions(seed + 1, 5)[0];
    local += fractions(seed + 2, 5)[0];
    sum = rank == 0 ? local : sum + local;
  }
  EXPECT_EQ(device[0][0], sum);
  // The pull after the round gives every output the same stored value.
  EXPECT_TRUE(bitwise_equal(device[5], device[0]));
  EXPECT_TRUE(bitwise_equal(device[6], device[0]));
}

TEST(DistDeviceKVStore, AsyncDeviceAppliesEachMergedPush) {
  test::ThreadedJob job(1, 1);
  {
    auto kv = make_store("dist_async_device", job, 0);
    EXPECT_EQ(kv->type(), "dist_async_device");
    kv->init({7}, {array({0, 0, 0})});
    kv->push({7, 7}, {array({1, 2, 3}), array({10, 20, 30})}, 0);
    NDArray a = array({0, 0, 0}), b = array({0, 0, 0});
    kv->pull({7, 7}, {a, b}, 0);
    EXPECT_EQ(values(a), (std::vector<float>{11, 22, 33}));
    EXPECT_EQ(values(b), (std::vector<float>{11, 22, 33}));
  }
  for (const auto& outcome : job.outcomes()) EXPECT_EQ(outcome, "");
}

Error construction_error(const std::string& type, std::unique_ptr<WorkerMerge> merge) {
  // No scheduler listens here: the check must come before joining.
  const ps::JobConfig job = test::inproc_job(ps::test::unique_url("inproc"), ps::Role::kWorker, 1, 1, 0);
  try {
    DistKVStore kv(type, job, test::fast_options(), ps::DataTransport::kAuto, 0, std::move(merge));
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << type << " was created";
  return Error(ErrorCode::kInternal, "created");
}

TEST(DistDeviceKVStore, TypeAndMergeMustAgreeBeforeJoining) {
  const auto start = std::chrono::steady_clock::now();
  const Error no_merge = construction_error("dist_sync_device", nullptr);
  EXPECT_EQ(no_merge.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(std::string(no_merge.what()).find("device merge"), std::string::npos) << no_merge.what();
  const Error host_type = construction_error("dist_async", WorkerMerge::on_device(core::make_cpu_context()));
  EXPECT_EQ(host_type.code(), ErrorCode::kInvalidArgument);
  const Error unknown = construction_error("dist_device", nullptr);
  EXPECT_EQ(unknown.code(), ErrorCode::kInvalidArgument);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s) << "waited for a scheduler";
}

}  // namespace
}  // namespace dt::kvstore
