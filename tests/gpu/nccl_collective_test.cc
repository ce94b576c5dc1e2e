// The NCCL collective layer against a CPU reference: every GPU of this
// process is one rank, inputs are small integers stored as floats, so the
// sums are exact and compared with ==. Tests that need two GPUs say skipped
// on a machine with one.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <vector>

#include "collective/nccl/communicator.h"
#include "core/context.h"
#include "core/cuda/gpu_context.h"
#include "core/error.h"
#include "core/ndarray.h"
#include "error_code_of.h"
#include "nccl_test_util.h"
#include "ops/tensor_math.h"

namespace dt {
namespace {

using collective::nccl::Communicator;
using core::DType;
using core::Error;
using core::ErrorCode;
using core::NDArray;
using core::Shape;

// Odd, above one kernel's block and not a multiple of NCCL's chunking.
constexpr int64_t kCount = 100003;

std::vector<float> input_of(int rank) { return test::small_integers(rank, kCount); }

using test_support::code_of;

class NcclCollectives : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int d = 0; d < core::gpu_count(); ++d) devices_.push_back(d);
    comms_ = Communicator::create_local(devices_);
    for (int d : devices_) contexts_.push_back(core::make_context(static_cast<int>(core::DeviceType::kGpu), d));
  }

  // The f32 input of each rank on its GPU, converted to dtype there.
  std::vector<NDArray> inputs(DType dtype) {
    std::vector<NDArray> arrays;
    for (size_t r = 0; r < devices_.size(); ++r) {
      NDArray f32 = NDArray::empty(contexts_[r], DType::kFloat32, Shape({kCount}));
      const std::vector<float> host = input_of(static_cast<int>(r));
      f32.copy_from_host(host.data(), host.size() * sizeof(float));
      NDArray a = NDArray::empty(contexts_[r], dtype, Shape({kCount}));
      ops::cast(a, f32);
      arrays.push_back(a);
    }
    return arrays;
  }
  std::vector<NDArray> outputs(DType dtype) {
    std::vector<NDArray> arrays;
    for (auto& ctx : contexts_) {
      NDArray a = NDArray::empty(ctx, dtype, Shape({kCount}));
      ops::fill(a, -1000.0);
      arrays.push_back(a);
    }
    return arrays;
  }
  static std::vector<float> host_f32(const NDArray& a) {
    NDArray f32 = NDArray::empty(a.context(), DType::kFloat32, a.shape());
    ops::cast(f32, a);
    std::vector<float> out(a.size());
    f32.copy_to_host(out.data(), out.size() * sizeof(float));
    return out;
  }
  std::vector<float> cpu_sum() const {
    std::vector<float> sum(kCount, 0.0f);
    for (size_t r = 0; r < devices_.size(); ++r) {
      const std::vector<float> in = input_of(static_cast<int>(r));
      for (int64_t i = 0; i < kCount; ++i) sum[i] += in[i];
    }
    return sum;
  }
  // Queues enqueue(rank) for every rank in one group, then waits for all.
  void on_every_rank(const std::function<void(size_t)>& enqueue) {
    std::vector<Communicator*> raw;
    for (auto& c : comms_) raw.push_back(c.get());
    collective::nccl::run_group(raw, [&] {
      for (size_t r = 0; r < comms_.size(); ++r) enqueue(r);
    });
    for (size_t r = 0; r < comms_.size(); ++r) comms_[r]->synchronize(stream(r), 60);
  }
  cudaStream_t stream(size_t r) const { return core::cuda::stream_of(*contexts_[r]); }

  std::vector<int> devices_;
  std::vector<std::unique_ptr<Communicator>> comms_;
  std::vector<std::shared_ptr<core::Context>> contexts_;
};

TEST_F(NcclCollectives, AllReduceSumEqualsTheCpuSumInFloat32AndFloat16) {
  for (DType dtype : {DType::kFloat32, DType::kFloat16}) {
    std::vector<NDArray> in = inputs(dtype);
    std::vector<NDArray> out = outputs(dtype);
    on_every_rank([&](size_t r) { comms_[r]->all_reduce_sum(in[r].data(), out[r].data(), kCount, dtype, stream(r)); });
    for (size_t r = 0; r < comms_.size(); ++r) {
      EXPECT_EQ(host_f32(out[r]), cpu_sum()) << core::dtype_name(dtype) << " on rank " << r;
    }
    // In place: the send buffer receives the sum.
    on_every_rank([&](size_t r) { comms_[r]->all_reduce_sum(in[r].data(), in[r].data(), kCount, dtype, stream(r)); });
    for (size_t r = 0; r < comms_.size(); ++r) EXPECT_EQ(host_f32(in[r]), cpu_sum()) << core::dtype_name(dtype);
  }
}

TEST_F(NcclCollectives, ReduceAndBroadcastUseTheRoot) {
  const int root = static_cast<int>(comms_.size()) - 1;
  std::vector<NDArray> in = inputs(DType::kFloat32);
  std::vector<NDArray> out = outputs(DType::kFloat32);
  on_every_rank([&](size_t r) {
    comms_[r]->reduce_sum(in[r].data(), out[r].data(), kCount, DType::kFloat32, root, stream(r));
  });
  EXPECT_EQ(host_f32(out[root]), cpu_sum());
  on_every_rank([&](size_t r) {
    comms_[r]->broadcast(in[root].data(), out[r].data(), kCount, DType::kFloat32, root, stream(r));
  });
  for (size_t r = 0; r < comms_.size(); ++r) EXPECT_EQ(host_f32(out[r]), input_of(root)) << "rank " << r;
}

TEST_F(NcclCollectives, ASingleRankJoinedThroughAUniqueIdWorks) {
  auto comm = Communicator::create_rank(0, 1, 0, collective::nccl::new_unique_id(), 30);
  EXPECT_EQ(comm->size(), 1);
  std::vector<NDArray> in = inputs(DType::kFloat32);
  comm->all_reduce_sum(in[0].data(), in[0].data(), kCount, DType::kFloat32, stream(0));
  comm->synchronize(stream(0), 30);
  EXPECT_EQ(host_f32(in[0]), input_of(0));
}

TEST_F(NcclCollectives, ARankWhosePeersNeverJoinTimesOut) {
  const auto id = collective::nccl::new_unique_id();
  EXPECT_EQ(code_of([&] { Communicator::create_rank(0, 2, 0, id, 1.0); }), ErrorCode::kTimedOut);
}

TEST_F(NcclCollectives, BadDeviceListsAreErrorsNotCrashes) {
  EXPECT_EQ(code_of([] { Communicator::create_local({}); }), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of([] { Communicator::create_local({0, 0}); }), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of([] { Communicator::create_local({core::gpu_count()}); }), ErrorCode::kNoDevice);
  EXPECT_EQ(code_of([] { Communicator::create_rank(0, 2, 2, collective::nccl::UniqueId{}, 1.0); }),
            ErrorCode::kInvalidArgument);
}

TEST_F(NcclCollectives, ReportsTheRanksItWasBuiltWith) {
  ASSERT_EQ(comms_.size(), devices_.size());
  for (size_t r = 0; r < comms_.size(); ++r) {
    EXPECT_EQ(comms_[r]->rank(), static_cast<int>(r));
    EXPECT_EQ(comms_[r]->size(), static_cast<int>(devices_.size()));
    EXPECT_EQ(comms_[r]->device(), devices_[r]);
  }
}

}  // namespace
}  // namespace dt
