// What the GPU op tests share: per-element tolerances, random inputs, and a
// fixture with a CPU engine and a GPU context that reports a skip without a
// visible device. The tolerances and why: gpu_ops_test.cc.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "core/context.h"
#include "core/copy.h"
#include "core/cuda/gpu_context.h"
#include "core/error.h"
#include "core/ndarray.h"
#include "data/mnist_dataset.h"
#include "nn/layer.h"
#include "nn/layers/softmax_cross_entropy_loss.h"
#include "ops/cpu/batch_norm.h"
#include "ops/cpu/conv2d.h"
#include "ops/cpu/cpu_engine.h"
#include "ops/cpu/eltwise.h"
#include "ops/cpu/inner_product.h"
#include "ops/cpu/pooling.h"
#include "ops/cpu/softmax_cross_entropy.h"
#include "ops/cuda/batch_norm.h"
#include "ops/cuda/eltwise.h"
#include "ops/cuda/inner_product.h"
#include "ops/cuda/pooling.h"
#include "ops/cuda/softmax_cross_entropy.h"
#include "ops/tensor_math.h"
#include "unit/ops/ops_test_util.h"
#if DT_WITH_CUDNN
#include "ops/cuda/conv2d.h"
#endif

namespace dt::gpu_ops_test {

using core::DType;
using core::NDArray;
using core::Shape;

struct Tolerance {
  double rel;
  double abs;
};
inline constexpr Tolerance kExact{0.0, 0.0};
inline constexpr Tolerance kElementwise{1e-5, 1e-6};
inline constexpr Tolerance kSums{1e-4, 1e-4};
inline constexpr Tolerance kBatchSums{1e-3, 1e-3};

inline std::vector<float> random_vector(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen);
  return v;
}

inline void expect_close(const std::vector<float>& gpu, const std::vector<float>& cpu, Tolerance tol,
                  const std::string& what) {
  ASSERT_EQ(gpu.size(), cpu.size()) << what;
  size_t bad = 0;
  for (size_t i = 0; i < cpu.size(); ++i) {
    const double diff = std::fabs(static_cast<double>(gpu[i]) - static_cast<double>(cpu[i]));
    if (diff <= tol.abs + tol.rel * std::fabs(static_cast<double>(cpu[i]))) continue;
    if (++bad <= 5) {
      ADD_FAILURE() << what << "[" << i << "]: gpu " << gpu[i] << ", cpu " << cpu[i] << " (rel " << tol.rel
                    << ", abs " << tol.abs << ")";
    }
  }
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << cpu.size() << " elements outside the tolerance";
}

class GpuOps : public ::testing::Test {
 protected:
  GpuOps() : engine_(2), gpu_(core::cuda::make_gpu_context(0)) {}

  // Device copies of host vectors, kept alive by the fixture.
  const float* upload(const std::vector<float>& v) {
    NDArray a = NDArray::empty(gpu_, DType::kFloat32, Shape({static_cast<int64_t>(v.size())}));
    a.copy_from_host(v.data(), v.size() * sizeof(float));
    arrays_.push_back(a);
    return a.data_as<float>();
  }
  float* device(size_t n) {
    NDArray a = NDArray::zeros(gpu_, DType::kFloat32, Shape({static_cast<int64_t>(n)}));
    arrays_.push_back(a);
    return a.data_as<float>();
  }
  std::vector<float> download(const float* ptr, size_t n) {
    std::vector<float> v(n);
    gpu_->synchronize();
    for (const NDArray& a : arrays_) {
      if (a.data_as<float>() == ptr) {
        a.copy_to_host(v.data(), n * sizeof(float));
        return v;
      }
    }
    ADD_FAILURE() << "download of a pointer the fixture does not own";
    return v;
  }

  // Training forward, backward and inference forward of one shape, beside
  // the CPU kernel's.
  void expect_batch_norm_matches_cpu(int64_t N, int64_t C, int64_t H, int64_t W);

#if DT_WITH_CUDNN
  void check_conv(const ops::Conv2DParams& p, uint32_t seed) {
    const ops::cpu::testing::ConvInputs in = ops::cpu::testing::conv_inputs(p, seed);
    const size_t nx = in.nx, nw = in.nw, ny = in.ny, nb = in.nb;
    const std::vector<float>&x = in.x, &w = in.w, &b = in.b, &dy = in.dy;
    ops::cpu::Conv2D cpu(engine_, p);
    std::vector<float> y(ny), dx(nx), dw(nw), db(nb);
    cpu.forward(x.data(), w.data(), b.data(), y.data());
    cpu.backward_data(dy.data(), w.data(), dx.data());
    cpu.backward_weights(x.data(), dy.data(), dw.data(), db.data());

    ops::cuda::Conv2D gpu(gpu_, p);
    const float *gx = upload(x), *gw = upload(w), *gb = upload(b), *gdy = upload(dy);
    float *gy = device(ny), *gdx = device(nx), *gdw = device(nw), *gdb = device(nb);
    gpu.forward(gx, gw, gb, gy);
    gpu.backward_data(gdy, gw, gdx);
    gpu.backward_weights(gx, gdy, gdw, gdb);
    expect_close(download(gy, ny), y, kSums, "conv y");
    expect_close(download(gdx, nx), dx, kSums, "conv dx");
    expect_close(download(gdw, nw), dw, kBatchSums, "conv dw");
    if (p.has_bias) expect_close(download(gdb, nb), db, kBatchSums, "conv db");
  }
#endif

  ops::cpu::CpuEngine engine_;
  std::shared_ptr<core::Context> gpu_;
  std::vector<NDArray> arrays_;
};

}  // namespace dt::gpu_ops_test
