// GPU tests of the core layer and the CUDA tensor kernels. The CPU kernels are
// the reference: every GPU result is compared with the CPU result for the same
// input. Without a visible device the program reports a skip (exit code 77,
// CTest's SKIP_RETURN_CODE) instead of failing.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <vector>

#include "core/context.h"
#include "core/cuda/caching_allocator.h"
#include "core/cuda/gpu_context.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/ndarray.h"
#include "ops/tensor_math.h"

namespace dt {
namespace {

using core::Context;
using core::DType;
using core::Error;
using core::ErrorCode;
using core::NDArray;
using core::Shape;
using core::cuda::CachingAllocator;
using core::cuda::GpuContext;

constexpr DType kAllDTypes[] = {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64,
                                DType::kInt32,   DType::kInt64,   DType::kUInt8};
constexpr DType kFloatingDTypes[] = {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64};

// More elements than one launch's bounded grid covers, so that the
// grid-stride loops go round more than once; odd, so no size is a multiple
// of the block.
constexpr int64_t kLongCount = int64_t{4096} * 256 * 2 + 77;

std::shared_ptr<Context> gpu(int id) { return core::make_context(static_cast<int>(core::DeviceType::kGpu), id); }
std::shared_ptr<Context> cpu() { return core::make_cpu_context(); }

std::vector<uint8_t> bytes_of(const NDArray& arr) {
  std::vector<uint8_t> out(arr.nbytes());
  arr.copy_to_host(out.data(), out.size());
  return out;
}

NDArray copy_to(const std::shared_ptr<Context>& ctx, const NDArray& src) {
  NDArray out = NDArray::empty(ctx, src.dtype(), src.shape());
  out.copy_from(src);
  return out;
}

// A CPU array of `dtype` holding `values` as the CPU cast converts them.
NDArray host_array(DType dtype, const std::vector<double>& values) {
  const Shape shape{static_cast<int64_t>(values.size())};
  NDArray f64 = NDArray::empty(cpu(), DType::kFloat64, shape);
  f64.copy_from_host(values.data(), values.size() * sizeof(double));
  NDArray out = NDArray::empty(cpu(), dtype, shape);
  ops::cast(out, f64);
  return out;
}

// Any array's elements as doubles (exact for every dtype but large int64).
std::vector<double> values_of(const NDArray& arr) {
  NDArray f64 = NDArray::empty(cpu(), DType::kFloat64, arr.shape());
  ops::cast(f64, copy_to(cpu(), arr));
  std::vector<double> out(arr.size());
  f64.copy_to_host(out.data(), out.size() * sizeof(double));
  return out;
}

std::vector<double> random_values(size_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(-4.0, 4.0);
  std::vector<double> out(count);
  for (double& v : out) v = dist(rng);
  return out;
}

// Relative spacing of the dtype's numbers: what one rounding may change.
double epsilon(DType dtype) {
  switch (dtype) {
    case DType::kFloat16: return std::ldexp(1.0, -10);
    case DType::kBFloat16: return std::ldexp(1.0, -7);
    case DType::kFloat32: return std::ldexp(1.0, -23);
    default: return std::ldexp(1.0, -52);
  }
}

// Equal bit for bit, except that any NaN equals any NaN: the CPU and CUDA
// conversions produce different NaN payloads, which carry no meaning.
void expect_same_elements(const NDArray& gpu_result, const NDArray& cpu_result, const char* what) {
  ASSERT_EQ(gpu_result.dtype(), cpu_result.dtype());
  const std::vector<uint8_t> got = bytes_of(gpu_result);
  const std::vector<uint8_t> want = bytes_of(cpu_result);
  ASSERT_EQ(got.size(), want.size());
  if (got == want) return;
  const std::vector<double> got_values = values_of(gpu_result);
  const std::vector<double> want_values = values_of(cpu_result);
  const size_t element = core::dtype_size(gpu_result.dtype());
  size_t mismatches = 0;
  for (size_t i = 0; i < got_values.size() && mismatches < 10; ++i) {
    if (std::isnan(got_values[i]) && std::isnan(want_values[i])) continue;
    if (std::memcmp(&got[i * element], &want[i * element], element) != 0) {
      ++mismatches;
      ADD_FAILURE() << what << " " << core::dtype_name(gpu_result.dtype()) << " element " << i << ": gpu "
                    << got_values[i] << ", cpu " << want_values[i];
    }
  }
}

TEST(CachingAllocator, ReusesAFreedBlockWithoutAnotherCudaMalloc) {
  CachingAllocator alloc(0);
  void* first = alloc.allocate(1000);
  ASSERT_NE(first, nullptr);
  CachingAllocator::Stats s = alloc.stats();
  EXPECT_EQ(s.device_malloc_calls, 1u);
  EXPECT_EQ(s.allocated_bytes, 1024u);  // rounded to the 512-byte granularity
  EXPECT_EQ(s.cached_bytes, 0u);

  alloc.deallocate(first);
  s = alloc.stats();
  EXPECT_EQ(s.allocated_bytes, 0u);
  EXPECT_EQ(s.cached_bytes, 1024u);

  // A request that rounds to the same size gets the same block back.
  void* again = alloc.allocate(600);
  EXPECT_EQ(again, first);
  s = alloc.stats();
  EXPECT_EQ(s.device_malloc_calls, 1u);
  EXPECT_EQ(s.cached_bytes, 0u);

  void* second = alloc.allocate(1000);
  EXPECT_NE(second, again);
  s = alloc.stats();
  EXPECT_EQ(s.device_malloc_calls, 2u);
  EXPECT_EQ(s.allocated_bytes, 2048u);
  EXPECT_EQ(s.peak_allocated_bytes, 2048u);

  alloc.deallocate(again);
  alloc.deallocate(second);
  s = alloc.stats();
  EXPECT_EQ(s.allocated_bytes, 0u);
  EXPECT_EQ(s.peak_allocated_bytes, 2048u);
  EXPECT_EQ(s.cached_bytes, 2048u);

  alloc.release_cached();
  EXPECT_EQ(alloc.stats().cached_bytes, 0u);
}

// The context's memory statistics are the allocator's: a cached block counts
// as an allocation when reused, and a peak reset starts from what is in use.
TEST(CachingAllocator, MemoryStatsCountReusedBlocksAndResetThePeak) {
  auto ctx = gpu(0);
  auto& alloc = static_cast<GpuContext&>(*ctx).allocator();
  void* a = alloc.allocate(1000);
  void* b = alloc.allocate(3u << 20);
  core::MemoryStats s = ctx->memory_stats();
  EXPECT_EQ(s.in_use_bytes, 1024u + (4u << 20));
  EXPECT_EQ(s.peak_bytes, 1024u + (4u << 20));
  EXPECT_EQ(s.allocations, 2u);
  alloc.deallocate(b);
  ctx->reset_peak_memory();
  s = ctx->memory_stats();
  EXPECT_EQ(s.in_use_bytes, 1024u);
  EXPECT_EQ(s.peak_bytes, 1024u);
  EXPECT_EQ(s.cached_bytes, 4u << 20);
  void* again = alloc.allocate(3u << 20);
  EXPECT_EQ(again, b);
  s = ctx->memory_stats();
  EXPECT_EQ(s.allocations, 3u);
  EXPECT_EQ(s.cached_bytes, 0u);
  EXPECT_EQ(s.peak_bytes, 1024u + (4u << 20));
  EXPECT_EQ(alloc.stats().device_malloc_calls, 2u);
  alloc.deallocate(again);
  alloc.deallocate(a);
  EXPECT_EQ(ctx->memory_stats().in_use_bytes, 0u);
}

TEST(CachingAllocator, RoundsLargeRequestsAndKeepsBigBlocksForBigRequests) {
  EXPECT_EQ(CachingAllocator::rounded_size(1), 512u);
  EXPECT_EQ(CachingAllocator::rounded_size(3u << 20), 4u << 20);
  EXPECT_EQ(CachingAllocator::rounded_size(std::numeric_limits<size_t>::max()), 0u);

  CachingAllocator alloc(0);
  void* big = alloc.allocate(8u << 20);
  alloc.deallocate(big);
  // Eight MiB for a 512-byte request would strand almost all of the block.
  void* small = alloc.allocate(512);
  EXPECT_NE(small, big);
  EXPECT_EQ(alloc.stats().device_malloc_calls, 2u);
  // Best fit: a 7 MiB request rounds to 8 MiB and takes the cached block.
  void* big_again = alloc.allocate(7u << 20);
  EXPECT_EQ(big_again, big);
  EXPECT_EQ(alloc.stats().device_malloc_calls, 2u);
  alloc.deallocate(small);
  alloc.deallocate(big_again);
  EXPECT_EQ(alloc.allocate(0), nullptr);
}

TEST(CachingAllocator, OutOfMemoryIsAnErrorAndLeavesTheDeviceUsable) {
  auto ctx = gpu(0);
  auto& alloc = static_cast<GpuContext&>(*ctx).allocator();
  try {
    alloc.allocate(size_t{1} << 52);  // 4 PiB
    FAIL() << "a 4 PiB allocation succeeded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kOutOfMemory);
    EXPECT_NE(std::string(e.what()).find("4503599627370496"), std::string::npos) << e.what();
  }
  try {
    alloc.allocate(std::numeric_limits<size_t>::max());
    FAIL() << "an allocation of SIZE_MAX bytes succeeded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kOutOfMemory);
  }
  // The failed cudaMalloc must not be reported again by the next launch.
  NDArray arr = NDArray::empty(ctx, DType::kFloat32, Shape{100});
  ops::fill(arr, 2.5);
  const std::vector<double> values = values_of(arr);
  for (double v : values) ASSERT_EQ(v, 2.5);
}

TEST(GpuContext, ArraysOfOneSizeReuseTheirMemory) {
  auto ctx = gpu(0);
  EXPECT_EQ(ctx->to_string(), "gpu(0)");
  auto& alloc = static_cast<GpuContext&>(*ctx).allocator();
  { NDArray a = NDArray::empty(ctx, DType::kFloat32, Shape{3, 1000}); }
  const CachingAllocator::Stats after_first = alloc.stats();
  EXPECT_EQ(after_first.device_malloc_calls, 1u);
  EXPECT_EQ(after_first.cached_bytes, 12288u);
  { NDArray b = NDArray::empty(ctx, DType::kInt32, Shape{1000, 3}); }
  EXPECT_EQ(alloc.stats().device_malloc_calls, 1u);
  EXPECT_EQ(alloc.stats().peak_allocated_bytes, 12288u);
}

TEST(GpuContext, ZerosAreWrittenBeforeACopyReadsThem) {
  auto ctx = gpu(0);
  {
    NDArray dirty = NDArray::empty(ctx, DType::kFloat64, Shape{kLongCount});
    ops::fill(dirty, 7.0);
  }
  // Reuses the dirty block: the memset and the copy are both queued on the
  // context's stream, so the copy must see zeros.
  NDArray zeros = NDArray::zeros(ctx, DType::kFloat64, Shape{kLongCount});
  ASSERT_EQ(static_cast<GpuContext&>(*ctx).allocator().stats().device_malloc_calls, 1u);
  for (double v : values_of(zeros)) ASSERT_EQ(v, 0.0);
}

TEST(GpuContext, AbsentDeviceIsNoDevice) {
  const int count = core::gpu_count();
  try {
    gpu(count);
    FAIL() << "gpu(" << count << ") was created with " << count << " devices visible";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNoDevice);
    EXPECT_NE(std::string(e.what()).find("gpu(" + std::to_string(count) + ")"), std::string::npos) << e.what();
  }
}

TEST(GpuContext, StreamOfACpuContextIsAnInternalError) {
  try {
    core::cuda::stream_of(*cpu());
    FAIL() << "a CPU context gave a CUDA stream";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInternal);
  }
  EXPECT_NE(core::cuda::stream_of(*gpu(0)), nullptr);
}

TEST(NDArrayOnGpu, HostRoundTripKeepsEveryByteOfEveryDType) {
  auto ctx = gpu(0);
  std::mt19937 rng(7);
  for (DType dtype : kAllDTypes) {
    NDArray arr = NDArray::empty(ctx, dtype, Shape{37, 11});
    std::vector<uint8_t> in(arr.nbytes());
    for (uint8_t& b : in) b = static_cast<uint8_t>(rng());
    arr.copy_from_host(in.data(), in.size());
    EXPECT_EQ(bytes_of(arr), in) << core::dtype_name(dtype);

    // A view starts at its offset into the storage.
    NDArray rows = arr.slice(5, 9);
    const size_t row_bytes = 11 * core::dtype_size(dtype);
    const std::vector<uint8_t> want(in.begin() + 5 * row_bytes, in.begin() + 9 * row_bytes);
    EXPECT_EQ(bytes_of(rows), want) << core::dtype_name(dtype);
  }
}

TEST(NDArrayOnGpu, CopyFromMovesBetweenCpuAndGpu) {
  const std::vector<double> values = random_values(1001, 11);
  NDArray host = host_array(DType::kFloat32, values);
  NDArray on_gpu = NDArray::zeros(gpu(0), DType::kFloat32, host.shape());
  on_gpu.copy_from(host);
  NDArray back = NDArray::zeros(cpu(), DType::kFloat32, host.shape());
  back.copy_from(on_gpu);
  EXPECT_EQ(bytes_of(back), bytes_of(host));
}

TEST(NDArrayOnGpu, CopyBetweenContextsWaitsForTheSourceStream) {
  // Two contexts on one device have two streams: the copy must wait for the
  // fill still queued on the source's stream.
  auto first = gpu(0);
  auto second = gpu(0);
  NDArray src = NDArray::empty(first, DType::kFloat32, Shape{kLongCount});
  ops::fill(src, -3.25);
  NDArray dst = NDArray::zeros(second, DType::kFloat32, src.shape());
  dst.copy_from(src);
  for (double v : values_of(dst)) ASSERT_EQ(v, -3.25);
}

TEST(NDArrayOnGpu, CopyBetweenDevices) {
  if (core::gpu_count() < 2) GTEST_SKIP() << "needs two GPUs";
  const std::vector<double> values = random_values(5003, 13);
  NDArray host = host_array(DType::kFloat64, values);
  NDArray on_first = copy_to(gpu(0), host);
  NDArray on_second = NDArray::zeros(gpu(1), DType::kFloat64, host.shape());
  on_second.copy_from(on_first);
  EXPECT_EQ(bytes_of(on_second), bytes_of(host));
  ops::scale(on_second, 2.0);
  on_first.copy_from(on_second);
  EXPECT_EQ(values_of(on_first)[17], 2.0 * values_of(host)[17]);
}

TEST(TensorMathOnGpu, FillMatchesTheCpuForEveryDType) {
  for (DType dtype : kAllDTypes) {
    for (double value : {0.0, 1.7, -2.0, 100.0}) {
      if (dtype == DType::kUInt8 && value < 0) continue;  // out of range: the dispatcher rejects it
      NDArray on_cpu = NDArray::empty(cpu(), dtype, Shape{kLongCount});
      NDArray on_gpu = NDArray::empty(gpu(0), dtype, Shape{kLongCount});
      ops::fill(on_cpu, value);
      ops::fill(on_gpu, value);
      expect_same_elements(on_gpu, on_cpu, "fill");
    }
  }
}

class FloatingOps : public ::testing::TestWithParam<DType> {};

// One rounding of a float or double result, then (for the 16-bit formats) one
// round-to-nearest-even: the same on both devices, so equal bit for bit.
TEST_P(FloatingOps, AddAndScaleMatchTheCpuExactly) {
  const DType dtype = GetParam();
  NDArray a = host_array(dtype, random_values(kLongCount, 1));
  NDArray b = host_array(dtype, random_values(kLongCount, 2));
  auto ctx = gpu(0);
  NDArray ga = copy_to(ctx, a);
  NDArray gb = copy_to(ctx, b);

  NDArray sum = NDArray::empty(cpu(), dtype, a.shape());
  NDArray gsum = NDArray::empty(ctx, dtype, a.shape());
  ops::add(sum, a, b);
  ops::add(gsum, ga, gb);
  expect_same_elements(gsum, sum, "add");

  ops::scale(a, 0.3);
  ops::scale(ga, 0.3);
  expect_same_elements(ga, a, "scale");
}

// With alpha a power of two the product is exact, so a fused multiply-add on
// either side cannot change the result: equal bit for bit.
TEST_P(FloatingOps, AxpyWithAnExactProductMatchesTheCpuExactly) {
  const DType dtype = GetParam();
  NDArray y = host_array(dtype, random_values(kLongCount, 3));
  NDArray x = host_array(dtype, random_values(kLongCount, 4));
  auto ctx = gpu(0);
  NDArray gy = copy_to(ctx, y);
  NDArray gx = copy_to(ctx, x);
  ops::axpy(y, -0.25, x);
  ops::axpy(gy, -0.25, gx);
  expect_same_elements(gy, y, "axpy");
}

// The kernel rounds the product as the CPU loop does, but a host compiler
// that fuses a * x + y (-march with FMA) rounds once; allow that one rounding
// of the product and the result.
TEST_P(FloatingOps, AxpyMatchesTheCpuWithinOneRounding) {
  const DType dtype = GetParam();
  const double alpha = 0.3;
  NDArray y = host_array(dtype, random_values(kLongCount, 5));
  NDArray x = host_array(dtype, random_values(kLongCount, 6));
  const std::vector<double> y0 = values_of(y);
  const std::vector<double> x0 = values_of(x);
  auto ctx = gpu(0);
  NDArray gy = copy_to(ctx, y);
  NDArray gx = copy_to(ctx, x);
  ops::axpy(y, alpha, x);
  ops::axpy(gy, alpha, gx);
  const std::vector<double> want = values_of(y);
  const std::vector<double> got = values_of(gy);
  const double eps = epsilon(dtype);
  for (size_t i = 0; i < got.size(); ++i) {
    const double tolerance = eps * (std::fabs(y0[i]) + std::fabs(alpha * x0[i]));
    ASSERT_LE(std::fabs(got[i] - want[i]), tolerance) << core::dtype_name(dtype) << " element " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, FloatingOps, ::testing::ValuesIn(kFloatingDTypes),
                         [](const ::testing::TestParamInfo<DType>& info) {
                           return std::string(core::dtype_name(info.param));
                         });

TEST(TensorMathOnGpu, CastMatchesTheCpuForEveryPairOfDTypes) {
  const double inf = std::numeric_limits<double>::infinity();
  // Rounding ties, integer and 16-bit range edges, subnormal halves,
  // overflow to infinity and every kind of value that saturates.
  std::vector<double> values = {0.0,   -0.0,   0.5,     1.5,    2.5,     -2.5,   -2.7,     255.0,  255.9,
                                256.0, 300.7,  -1.0,    -129.0, 65504.0, 65519.0, 65520.0, 1e5,   -1e5,
                                3e9,   -3e9,   1e19,    -1e19,  6e-8,    1e-5,   3.4e38,   1e300, -1e300,
                                inf,   -inf,   std::nan("")};
  const std::vector<double> random = random_values(kLongCount, 9);
  values.insert(values.end(), random.begin(), random.end());
  auto ctx = gpu(0);
  for (DType src_dtype : kAllDTypes) {
    NDArray src = host_array(src_dtype, values);
    NDArray gsrc = copy_to(ctx, src);
    for (DType dst_dtype : kAllDTypes) {
      SCOPED_TRACE(std::string(core::dtype_name(src_dtype)) + " -> " + core::dtype_name(dst_dtype));
      NDArray dst = NDArray::empty(cpu(), dst_dtype, src.shape());
      NDArray gdst = NDArray::empty(ctx, dst_dtype, src.shape());
      ops::cast(dst, src);
      ops::cast(gdst, gsrc);
      expect_same_elements(gdst, dst, "cast");
    }
  }
}

}  // namespace
}  // namespace dt
