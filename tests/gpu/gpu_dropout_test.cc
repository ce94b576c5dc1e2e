// Dropout on a GPU against Dropout on the CPU. Both draw their masks with
// ops::dropout_keeps from (seed, layer name, step, index), so the
// comparisons are exact: float32 outputs and gradients bit for bit, the
// 16-bit formats within one rounding of the CPU's float32 result (the kernel
// scales in float32 and rounds once). Without a visible device the program
// reports a skip (exit code 77, CTest's SKIP_RETURN_CODE).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "core/context.h"
#include "core/cuda/gpu_context.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/ndarray.h"
#include "gpu/gpu_test_util.h"
#include "nn/layer.h"
#include "ops/cuda/dropout.h"
#include "ops/dropout_mask.h"

namespace dt {
namespace {

using core::DType;
using core::NDArray;
using core::Shape;

using gpu_test::host_floats;
using gpu_test::random_values;

NDArray floats_on(const std::shared_ptr<core::Context>& ctx, const Shape& shape, const std::vector<float>& v) {
  NDArray out = NDArray::empty(ctx, DType::kFloat32, shape);
  out.copy_from_host(v.data(), v.size() * sizeof(float));
  return out;
}

struct LayerRun {
  std::vector<float> y, dx;
};

// One training forward and backward of a Dropout layer called "drop" at
// (seed, step) on ctx.
LayerRun run_layer(const std::shared_ptr<core::Context>& ctx, const Shape& shape, const std::vector<float>& x_host,
                   const std::vector<float>& dy_host, double rate, uint64_t seed, uint64_t step) {
  auto layer = nn::create_layer("Dropout", "drop", {{"rate", rate}});
  NDArray x = floats_on(ctx, shape, x_host);
  NDArray y = NDArray::zeros(ctx, DType::kFloat32, shape);
  NDArray dy = floats_on(ctx, shape, dy_host);
  NDArray dx = NDArray::zeros(ctx, DType::kFloat32, shape);
  nn::LayerRuntime runtime;
  runtime.seed = seed;
  runtime.step = step;
  nn::ForwardArgs forward;
  forward.inputs = {&x};
  forward.output = &y;
  forward.train = true;
  forward.runtime = &runtime;
  layer->forward(forward);
  nn::BackwardArgs backward;
  backward.inputs = {&x};
  backward.output = &y;
  backward.output_grad = &dy;
  backward.input_grads = {&dx};
  backward.runtime = &runtime;
  layer->backward(backward);
  return {host_floats(y), host_floats(dx)};
}

class GpuDropout : public ::testing::Test {
 protected:
  void SetUp() override { gpu_ = core::cuda::make_gpu_context(0); }
  std::shared_ptr<core::Context> gpu_;
};

TEST_F(GpuDropout, LayerMatchesCpuBitForBit) {
  const Shape shape({7, 3, 11, 13});  // 3003 elements: not a multiple of a block
  const auto x = random_values(static_cast<size_t>(shape.numel()), 1);
  const auto dy = random_values(static_cast<size_t>(shape.numel()), 2);
  for (const double rate : {0.1, 0.5, 0.9}) {
    for (const uint64_t step : {uint64_t{0}, uint64_t{5}}) {
      SCOPED_TRACE(testing::Message() << "rate " << rate << ", step " << step);
      const LayerRun cpu = run_layer(core::make_cpu_context(), shape, x, dy, rate, 42, step);
      const LayerRun gpu = run_layer(gpu_, shape, x, dy, rate, 42, step);
      EXPECT_EQ(gpu.y, cpu.y);
      EXPECT_EQ(gpu.dx, cpu.dx);
      size_t dropped = 0;
      for (float v : cpu.y) dropped += v == 0.0f ? 1 : 0;
      // Binomial(3003, rate): 6 standard deviations either way.
      const double n = static_cast<double>(cpu.y.size());
      const double sd = std::sqrt(n * rate * (1 - rate));
      EXPECT_NEAR(static_cast<double>(dropped), n * rate, 6 * sd);
    }
  }
}

TEST_F(GpuDropout, InferenceIsTheIdentityOnTheGpu) {
  const Shape shape({4, 5});
  const auto x_host = random_values(20, 3);
  auto layer = nn::create_layer("Dropout", "drop", {{"rate", 0.5}});
  NDArray x = floats_on(gpu_, shape, x_host);
  NDArray y = NDArray::zeros(gpu_, DType::kFloat32, shape);
  nn::ForwardArgs forward;
  forward.inputs = {&x};
  forward.output = &y;
  forward.train = false;
  layer->forward(forward);
  EXPECT_EQ(host_floats(y), x_host);
}

// The kernel on 16-bit storage: each kept element is the float32 product
// rounded once, each dropped one zero, and the mask the CPU's.
template <uint16_t (*Narrow)(float), float (*Widen)(uint16_t)>
void check_sixteen_bit(const std::shared_ptr<core::Context>& gpu, DType dtype) {
  SCOPED_TRACE(core::dtype_name(dtype));
  constexpr size_t kCount = 5000;
  constexpr double kRate = 0.3;
  constexpr uint64_t kKey = 0x1234abcdULL;
  const auto values = random_values(kCount, 4);
  std::vector<uint16_t> bits(kCount);
  for (size_t i = 0; i < kCount; ++i) bits[i] = Narrow(values[i]);
  const Shape shape({static_cast<int64_t>(kCount)});
  NDArray x = NDArray::empty(gpu, dtype, shape);
  x.copy_from_host(bits.data(), kCount * sizeof(uint16_t));
  NDArray y = NDArray::zeros(gpu, dtype, shape);
  NDArray mask = NDArray::zeros(gpu, DType::kUInt8, shape);
  ops::cuda::dropout_forward(*gpu, dtype, x.data(), y.data(), mask.data_as<uint8_t>(), kCount, kKey, kRate);
  NDArray dx = NDArray::zeros(gpu, dtype, shape);
  ops::cuda::dropout_backward(*gpu, dtype, x.data(), dx.data(), mask.data_as<uint8_t>(), kCount, kRate);
  std::vector<uint16_t> y_bits(kCount), dx_bits(kCount);
  std::vector<uint8_t> mask_host(kCount);
  y.copy_to_host(y_bits.data(), kCount * sizeof(uint16_t));
  dx.copy_to_host(dx_bits.data(), kCount * sizeof(uint16_t));
  mask.copy_to_host(mask_host.data(), kCount);
  const float scale = static_cast<float>(1.0 / (1.0 - kRate));
  size_t bad = 0;
  for (size_t i = 0; i < kCount; ++i) {
    const bool keep = ops::dropout_keeps(kKey, i, kRate);
    const uint16_t expected = keep ? Narrow(Widen(bits[i]) * scale) : Narrow(0.0f);
    if (mask_host[i] != (keep ? 1 : 0) || y_bits[i] != expected || dx_bits[i] != expected) {
      if (++bad <= 3) ADD_FAILURE() << "element " << i << ": mask " << int(mask_host[i]) << ", y " << y_bits[i]
                                    << ", dx " << dx_bits[i] << ", expected " << expected;
    }
  }
  EXPECT_EQ(bad, 0u);
}

TEST_F(GpuDropout, SixteenBitKernelsRoundOnce) {
  check_sixteen_bit<core::float_to_half, core::half_to_float>(gpu_, DType::kFloat16);
  check_sixteen_bit<core::float_to_bfloat16, core::bfloat16_to_float>(gpu_, DType::kBFloat16);
}

TEST_F(GpuDropout, OtherDtypesAreNotSupported) {
  NDArray x = NDArray::zeros(gpu_, DType::kFloat64, Shape({8}));
  NDArray mask = NDArray::zeros(gpu_, DType::kUInt8, Shape({8}));
  try {
    ops::cuda::dropout_forward(*gpu_, DType::kFloat64, x.data(), x.data(), mask.data_as<uint8_t>(), 8, 1, 0.5);
    ADD_FAILURE() << "float64 dropout ran";
  } catch (const core::Error& e) {
    EXPECT_EQ(e.code(), core::ErrorCode::kNotSupported) << e.what();
  }
}

}  // namespace
}  // namespace dt
