// ops::dropout_forward / dropout_backward on the CPU: the loop that used to
// live in DropoutLayer, now behind the op that also reaches the GPU kernel.
#include "ops/dropout.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "core/context.h"
#include "core/error.h"
#include "ops/dropout_mask.h"

namespace dt::ops {
namespace {

constexpr size_t kCount = 1000;
constexpr uint64_t kKey = 0x5eedULL;
constexpr double kRate = 0.3;

std::vector<float> ramp(size_t n) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = 0.25f * static_cast<float>(i) - 100.0f;
  return v;
}

TEST(DropoutOpTest, CpuForwardKeepsWhatTheMaskFunctionKeepsAndScalesIt) {
  const auto cpu = core::make_cpu_context();
  const std::vector<float> x = ramp(kCount);
  std::vector<float> y(kCount, -1.0f);
  std::vector<uint8_t> mask(kCount, 7);
  dropout_forward(*cpu, core::DType::kFloat32, x.data(), y.data(), mask.data(), kCount, kKey, kRate);
  const float scale = static_cast<float>(1.0 / (1.0 - kRate));
  size_t kept = 0;
  for (size_t i = 0; i < kCount; ++i) {
    const bool keep = dropout_keeps(kKey, i, kRate);
    kept += keep ? 1 : 0;
    ASSERT_EQ(mask[i], keep ? 1 : 0) << i;
    ASSERT_EQ(y[i], keep ? x[i] * scale : 0.0f) << i;
  }
  // About (1 - rate) of the elements, far from all or none.
  EXPECT_GT(kept, 600u);
  EXPECT_LT(kept, 800u);
}

TEST(DropoutOpTest, CpuRunsInPlaceAndBackwardFollowsTheMask) {
  const auto cpu = core::make_cpu_context();
  const std::vector<float> x = ramp(kCount);
  std::vector<float> y = x;
  std::vector<uint8_t> mask(kCount);
  dropout_forward(*cpu, core::DType::kFloat32, y.data(), y.data(), mask.data(), kCount, kKey, kRate);
  std::vector<float> dy = ramp(kCount);
  dropout_backward(*cpu, core::DType::kFloat32, dy.data(), dy.data(), mask.data(), kCount, kRate);
  const float scale = static_cast<float>(1.0 / (1.0 - kRate));
  for (size_t i = 0; i < kCount; ++i) {
    ASSERT_EQ(y[i], mask[i] ? x[i] * scale : 0.0f) << i;
    ASSERT_EQ(dy[i], mask[i] ? x[i] * scale : 0.0f) << i;
  }
}

TEST(DropoutOpTest, CpuIsFloat32Only) {
  const auto cpu = core::make_cpu_context();
  std::vector<uint16_t> x(4), y(4);
  std::vector<uint8_t> mask(4);
  try {
    dropout_forward(*cpu, core::DType::kFloat16, x.data(), y.data(), mask.data(), 4, kKey, kRate);
    FAIL() << "float16 on the CPU was accepted";
  } catch (const core::Error& e) {
    EXPECT_EQ(e.code(), core::ErrorCode::kNotSupported) << e.what();
  }
}

}  // namespace
}  // namespace dt::ops
