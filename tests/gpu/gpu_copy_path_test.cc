// MXNET_ENABLE_GPU_P2P on a GPU: the copies between GPU contexts take the
// path core/gpu_copy_path.h chooses (the destination context counts them),
// and the host-staged copy moves every byte, chunk by chunk. Skipped (77)
// without a device; the two-GPU tests skip on a machine with one.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <vector>

#include "core/context.h"
#include "core/cuda/gpu_context.h"
#include "core/cuda/host_staged_copy.h"
#include "core/dtype.h"
#include "core/gpu_copy_path.h"
#include "core/ndarray.h"

namespace dt {
namespace {

using core::DType;
using core::GpuCopyPath;
using core::NDArray;
using core::Shape;
using core::cuda::GpuContext;

std::shared_ptr<core::Context> gpu(int id) { return core::make_context(static_cast<int>(core::DeviceType::kGpu), id); }

std::vector<uint8_t> pattern(size_t n) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(i * 131 + 7);
  return v;
}

NDArray filled(const std::shared_ptr<core::Context>& ctx, const std::vector<uint8_t>& bytes) {
  NDArray a = NDArray::empty(ctx, DType::kUInt8, Shape({static_cast<int64_t>(bytes.size())}));
  a.copy_from_host(bytes.data(), bytes.size());
  return a;
}

std::vector<uint8_t> bytes_of(const NDArray& a) {
  std::vector<uint8_t> out(a.nbytes());
  a.copy_to_host(out.data(), out.size());
  return out;
}

const core::GpuCopyCounts& counts(const std::shared_ptr<core::Context>& ctx) {
  return core::cuda::gpu_context_of(*ctx).copies_in();
}

// Each test sets the variable before it makes its contexts (they read it then).
class GpuCopyPathTest : public ::testing::Test {
 protected:
  void TearDown() override { unsetenv("MXNET_ENABLE_GPU_P2P"); }
};

TEST_F(GpuCopyPathTest, TwoContextsOfOneGpuCopyOnTheDeviceNeverPeerToPeer) {
  for (const char* p2p : {"1", "0"}) {
    setenv("MXNET_ENABLE_GPU_P2P", p2p, 1);
    auto a = gpu(0), b = gpu(0);
    const std::vector<uint8_t> in = pattern(1 << 20);
    NDArray src = filled(a, in);
    NDArray dst = NDArray::empty(b, DType::kUInt8, src.shape());
    dst.copy_from(src);
    EXPECT_EQ(bytes_of(dst), in) << "MXNET_ENABLE_GPU_P2P=" << p2p;
    EXPECT_EQ(counts(b).of(GpuCopyPath::kSameDevice), 1u) << p2p;
    EXPECT_EQ(counts(b).of(GpuCopyPath::kPeer), 0u) << p2p;
    EXPECT_EQ(counts(b).of(GpuCopyPath::kThroughHost), 0u) << p2p;
  }
}

TEST_F(GpuCopyPathTest, TheHostStagedCopyMovesEveryByteInChunks) {
  // Between two contexts of one GPU, which the staging does not mind: the
  // path MXNET_ENABLE_GPU_P2P=0 gives two GPUs, run where one is lent.
  auto a = gpu(0), b = gpu(0);
  for (size_t bytes : {size_t{1}, size_t{4095}, size_t{4096}, size_t{3 * 4096 + 17}}) {
    const std::vector<uint8_t> in = pattern(bytes);
    NDArray src = filled(a, in);
    NDArray dst = NDArray::empty(b, DType::kUInt8, src.shape());
    core::cuda::HostStagedCopy staging(4096);
    staging.copy(*b, dst.data(), *a, src.data(), bytes);
    EXPECT_EQ(bytes_of(dst), in) << bytes << " bytes";
  }
}

TEST_F(GpuCopyPathTest, TwoGpusCopyPeerToPeerByDefault) {
  if (core::gpu_count() < 2) GTEST_SKIP() << "needs two GPUs";
  auto first = gpu(0), second = gpu(1);
  const std::vector<uint8_t> in = pattern((4 << 20) + 3);
  NDArray dst = NDArray::empty(second, DType::kUInt8, Shape({static_cast<int64_t>(in.size())}));
  dst.copy_from(filled(first, in));
  EXPECT_EQ(bytes_of(dst), in);
  EXPECT_EQ(counts(second).of(GpuCopyPath::kPeer), 1u);
  EXPECT_EQ(counts(second).of(GpuCopyPath::kThroughHost), 0u);
}

TEST_F(GpuCopyPathTest, TwoGpusCopyThroughHostMemoryWithTheVariableZero) {
  if (core::gpu_count() < 2) GTEST_SKIP() << "needs two GPUs";
  setenv("MXNET_ENABLE_GPU_P2P", "0", 1);
  auto first = gpu(0), second = gpu(1);
  // More than one chunk of the staging buffer, and not a multiple of it.
  const std::vector<uint8_t> in = pattern((9 << 20) + 5);
  NDArray dst = NDArray::empty(second, DType::kUInt8, Shape({static_cast<int64_t>(in.size())}));
  dst.copy_from(filled(first, in));
  EXPECT_EQ(bytes_of(dst), in);
  EXPECT_EQ(counts(second).of(GpuCopyPath::kThroughHost), 1u);
  EXPECT_EQ(counts(second).of(GpuCopyPath::kPeer), 0u);
  // And back the other way, into the first GPU's context.
  NDArray back = NDArray::empty(first, DType::kUInt8, dst.shape());
  back.copy_from(dst);
  EXPECT_EQ(bytes_of(back), in);
  EXPECT_EQ(counts(first).of(GpuCopyPath::kThroughHost), 1u);
}

}  // namespace
}  // namespace dt
