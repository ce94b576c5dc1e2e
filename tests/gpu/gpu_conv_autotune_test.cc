// The GPU convolution's algorithm choice (ops/cuda/conv_algorithm_search.h)
// in each MXNET_CUDNN_AUTOTUNE_DEFAULT mode against the CPU kernel, the
// per-context cache, and the shared workspace the calls run in. Without a
// visible device the program reports a skip (exit code 77).
//
// The variable is read when a context's first convolution is built, so each
// case sets it, then makes its own context.
//
// Tolerances, |gpu - cpu| <= abs + rel * |cpu| per element, those of
// gpu_ops_test's Conv2DMatchesCpu (float32 on both sides, cuDNN with FMA
// math: a searched algorithm may be Winograd or FFT, never TF32):
//   rel 1e-4, abs 1e-4   y and dx
//   rel 1e-3, abs 1e-3   dw and db (sums over the whole batch)
// 16-bit data against the CPU's float32 on the same (rounded) inputs, in the
// max norm, as gpu_mixed_precision_test's layers: float16 rel 1e-2,
// bfloat16 rel 3e-2 of max |cpu|.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "core/context.h"
#include "core/cuda/gpu_context.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/ndarray.h"
#include "error_code_of.h"
#include "gpu/gpu_test_util.h"
#include "ops/conv_algorithm_choice.h"
#include "ops/cpu/conv2d.h"
#include "ops/cpu/cpu_engine.h"
#include "ops/cuda/conv2d.h"
#include "ops/cuda/conv_algorithm_search.h"

namespace dt {
namespace {

using core::DType;
using core::NDArray;
using core::Shape;
using gpu_test::Tolerance;

constexpr Tolerance kSums{1e-4, 1e-4};
constexpr Tolerance kBatchSums{1e-3, 1e-3};

// A fresh GPU context whose convolutions follow MXNET_CUDNN_AUTOTUNE_DEFAULT=mode.
std::shared_ptr<core::Context> context_with(const char* mode) {
  setenv("MXNET_CUDNN_AUTOTUNE_DEFAULT", mode, 1);
  return core::cuda::make_gpu_context(0);
}

class EnvironmentRestored : public ::testing::Test {
 protected:
  ~EnvironmentRestored() override { unsetenv("MXNET_CUDNN_AUTOTUNE_DEFAULT"); }
};

std::vector<ops::Conv2DParams> shapes() {
  std::vector<ops::Conv2DParams> out;
  ops::Conv2DParams p;  // a ResNet-18 CIFAR block's 3x3 convolution, small batch
  p.N = 8, p.C = 64, p.H = 16, p.W = 16, p.K = 64, p.R = 3, p.S = 3, p.pad_h = 1, p.pad_w = 1;
  p.has_bias = false;
  out.push_back(p);
  ops::Conv2DParams q;  // strided, padded, dilated, non-square, with bias
  q.N = 4, q.C = 6, q.H = 13, q.W = 11, q.K = 8, q.R = 3, q.S = 3, q.stride_h = 2, q.stride_w = 2;
  q.pad_h = 1, q.pad_w = 1, q.dilation_h = 2, q.dilation_w = 2;
  out.push_back(q);
  ops::Conv2DParams g;  // grouped
  g.N = 2, g.C = 8, g.H = 9, g.W = 9, g.K = 12, g.R = 3, g.S = 3, g.pad_h = 1, g.pad_w = 1, g.groups = 4;
  out.push_back(g);
  return out;
}

// Host values rounded to dtype, so that the CPU's float32 reference sees
// exactly the GPU's inputs.
std::vector<float> rounded(std::vector<float> v, DType dtype) {
  for (float& x : v) {
    if (dtype == DType::kFloat16) x = core::half_to_float(core::float_to_half(x));
    if (dtype == DType::kBFloat16) x = core::bfloat16_to_float(core::float_to_bfloat16(x));
  }
  return v;
}

// A one-dimensional array of dtype on gpu holding v.
NDArray vector_of(const std::shared_ptr<core::Context>& gpu, DType dtype, const std::vector<float>& v) {
  return gpu_test::array_of(gpu, dtype, Shape({static_cast<int64_t>(v.size())}), v);
}

// Forward, backward data and backward weights of p on gpu in dtype against
// the CPU kernel on the same inputs.
void expect_matches_cpu(const std::shared_ptr<core::Context>& gpu, const ops::Conv2DParams& p, DType dtype,
                        uint32_t seed) {
  const size_t nx = static_cast<size_t>(p.N * p.C * p.H * p.W);
  const size_t nw = static_cast<size_t>(p.K * (p.C / p.groups) * p.R * p.S);
  const size_t ny = static_cast<size_t>(p.N * p.K * p.out_h() * p.out_w());
  const size_t nb = static_cast<size_t>(p.K);
  const std::vector<float> x = rounded(gpu_test::random_values(nx, seed), dtype);
  const std::vector<float> w = rounded(gpu_test::random_values(nw, seed + 1, 0.3f), dtype);
  const std::vector<float> dy = rounded(gpu_test::random_values(ny, seed + 2), dtype);
  const std::vector<float> b = gpu_test::random_values(nb, seed + 3);

  ops::cpu::CpuEngine engine(2);
  ops::cpu::Conv2D cpu(engine, p);
  std::vector<float> y(ny), dx(nx), dw(nw), db(nb);
  cpu.forward(x.data(), w.data(), b.data(), y.data());
  cpu.backward_data(dy.data(), w.data(), dx.data());
  cpu.backward_weights(x.data(), dy.data(), dw.data(), db.data());

  ops::cuda::Conv2D conv(gpu, p, dtype);
  const NDArray gx = vector_of(gpu, dtype, x), gw = vector_of(gpu, dtype, w),
                gdy = vector_of(gpu, dtype, dy), gb = vector_of(gpu, DType::kFloat32, b);
  const NDArray gy = NDArray::zeros(gpu, dtype, Shape({static_cast<int64_t>(ny)}));
  const NDArray gdx = NDArray::zeros(gpu, dtype, Shape({static_cast<int64_t>(nx)}));
  const NDArray gdw = NDArray::zeros(gpu, dtype, Shape({static_cast<int64_t>(nw)}));
  const NDArray gdb = NDArray::zeros(gpu, DType::kFloat32, Shape({static_cast<int64_t>(nb)}));
  conv.forward(gx.data(), gw.data(), gb.data_as<float>(), gy.data());
  conv.backward_data(gdy.data(), gw.data(), gdx.data());
  conv.backward_weights(gx.data(), gdy.data(), gdw.data(), gdb.data_as<float>());
  gpu->synchronize();
  if (dtype == DType::kFloat32) {
    gpu_test::expect_close(y, gpu_test::host_floats(gy), kSums, "y");
    gpu_test::expect_close(dx, gpu_test::host_floats(gdx), kSums, "dx");
    gpu_test::expect_close(dw, gpu_test::host_floats(gdw), kBatchSums, "dw");
    if (p.has_bias) gpu_test::expect_close(db, gpu_test::host_floats(gdb), kBatchSums, "db");
  } else {
    const double rel = dtype == DType::kFloat16 ? 1e-2 : 3e-2;
    gpu_test::expect_close_in_max_norm(y, gpu_test::host_floats(gy), rel, "y");
    gpu_test::expect_close_in_max_norm(dx, gpu_test::host_floats(gdx), rel, "dx");
    gpu_test::expect_close_in_max_norm(dw, gpu_test::host_floats(gdw), rel, "dw");
  }
}

ops::ConvAlgorithmKey key_of(const ops::Conv2DParams& p, DType dtype) {
  return ops::ConvAlgorithmKey::of(p, dtype, dtype == DType::kFloat32 ? ops::ConvMath::kFma : ops::ConvMath::kTensorOp,
                                   0);
}

using GpuConvAutotune = EnvironmentRestored;

TEST_F(GpuConvAutotune, EveryModeMatchesTheCpuKernelInFloat32) {
  for (const char* mode : {"0", "1", "2"}) {
    SCOPED_TRACE(std::string("MXNET_CUDNN_AUTOTUNE_DEFAULT=") + mode);
    const std::shared_ptr<core::Context> gpu = context_with(mode);
    uint32_t seed = 500;
    for (const ops::Conv2DParams& p : shapes()) {
      expect_matches_cpu(gpu, p, DType::kFloat32, seed += 10);
      // The search ran (mode 0: the heuristics chose); a search that fell
      // back would say so here, with its warning on the log.
      const auto entry =
          ops::cuda::conv_algorithm_cache(core::cuda::gpu_context_of(*gpu)).find(key_of(p, DType::kFloat32));
      ASSERT_TRUE(entry.has_value());
      EXPECT_EQ(entry->searched, std::string(mode) != "0");
      if (std::string(mode) == "1") {
        for (const ops::ConvAlgorithmChoice& c : {entry->forward, entry->backward_data, entry->backward_filter}) {
          EXPECT_LE(c.workspace_bytes, ops::kConvWorkspaceLimitBytes);
        }
      }
    }
  }
}

TEST_F(GpuConvAutotune, TheSearchedPathMatchesTheCpuKernelIn16Bits) {
  const std::shared_ptr<core::Context> gpu = context_with("1");
  uint32_t seed = 700;
  for (DType dtype : {DType::kFloat16, DType::kBFloat16}) {
    SCOPED_TRACE(core::dtype_name(dtype));
    for (const ops::Conv2DParams& p : shapes()) {
      expect_matches_cpu(gpu, p, dtype, seed += 10);
      const auto entry = ops::cuda::conv_algorithm_cache(core::cuda::gpu_context_of(*gpu)).find(key_of(p, dtype));
      ASSERT_TRUE(entry.has_value());
      EXPECT_TRUE(entry->searched);
    }
  }
}

TEST_F(GpuConvAutotune, LayersOfOneShapeShareOneSearchPerContext) {
  const std::shared_ptr<core::Context> gpu = context_with("1");
  ops::ConvAlgorithmCache& cache = ops::cuda::conv_algorithm_cache(core::cuda::gpu_context_of(*gpu));
  ops::Conv2DParams p = shapes()[0];
  {
    ops::cuda::Conv2D first(gpu, p);
    EXPECT_EQ(cache.size(), 1u);
    EXPECT_EQ(cache.hits(), 0u);
    p.has_bias = true;  // the bias is not part of cuDNN's problem
    ops::cuda::Conv2D second(gpu, p);
    EXPECT_EQ(cache.size(), 1u);
    EXPECT_EQ(cache.hits(), 1u);
  }
  // A later net on the same context: still no second search.
  ops::cuda::Conv2D later(gpu, p);
  EXPECT_EQ(cache.hits(), 2u);
  ops::cuda::Conv2D other_dtype(gpu, p, DType::kBFloat16);
  EXPECT_EQ(cache.size(), 2u);
  // Another context has a cache of its own.
  const std::shared_ptr<core::Context> other = context_with("1");
  EXPECT_EQ(ops::cuda::conv_algorithm_cache(core::cuda::gpu_context_of(*other)).size(), 0u);
}

TEST_F(GpuConvAutotune, CallsRunInTheSharedWorkspaceAndAllocateNothing) {
  const std::shared_ptr<core::Context> gpu = context_with("2");
  core::cuda::GpuContext& g = core::cuda::gpu_context_of(*gpu);
  const ops::Conv2DParams p = shapes()[0];
  ops::cuda::Conv2D conv(gpu, p);
  const auto entry = ops::cuda::conv_algorithm_cache(g).find(key_of(p, DType::kFloat32));
  ASSERT_TRUE(entry.has_value());
  const size_t needed = std::max({entry->forward.workspace_bytes, entry->backward_data.workspace_bytes,
                                  entry->backward_filter.workspace_bytes});
  EXPECT_GE(g.workspace().bytes(), needed);
  const size_t nx = static_cast<size_t>(p.N * p.C * p.H * p.W), nw = static_cast<size_t>(p.K * p.C * p.R * p.S);
  const size_t ny = static_cast<size_t>(p.N * p.K * p.out_h() * p.out_w());
  const NDArray x = vector_of(gpu, DType::kFloat32, gpu_test::random_values(nx, 1));
  const NDArray w = vector_of(gpu, DType::kFloat32, gpu_test::random_values(nw, 2, 0.3f));
  const NDArray y = NDArray::zeros(gpu, DType::kFloat32, Shape({static_cast<int64_t>(ny)}));
  const NDArray dx = NDArray::zeros(gpu, DType::kFloat32, Shape({static_cast<int64_t>(nx)}));
  const NDArray dw = NDArray::zeros(gpu, DType::kFloat32, Shape({static_cast<int64_t>(nw)}));
  const size_t allocations = g.allocator().stats().allocations;
  for (int step = 0; step < 3; ++step) {
    conv.forward(x.data(), w.data(), nullptr, y.data());
    conv.backward_data(y.data(), w.data(), dx.data());
    conv.backward_weights(x.data(), y.data(), dw.data(), nullptr);
  }
  gpu->synchronize();
  // What capturing the step in a CUDA graph needs: the same addresses each step.
  EXPECT_EQ(g.allocator().stats().allocations, allocations);
}

TEST_F(GpuConvAutotune, AMalformedSettingIsAnInvalidArgumentNamingIt) {
  const std::shared_ptr<core::Context> gpu = context_with("fastest");
  std::string message;
  EXPECT_EQ(test_support::code_of([&] { ops::cuda::Conv2D conv(gpu, shapes()[0]); }, &message),
            core::ErrorCode::kInvalidArgument);
  EXPECT_NE(message.find("MXNET_CUDNN_AUTOTUNE_DEFAULT"), std::string::npos) << message;
}

}  // namespace
}  // namespace dt
