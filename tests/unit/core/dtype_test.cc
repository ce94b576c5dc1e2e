#include "core/dtype.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "core/error.h"

namespace dt::core {
namespace {

TEST(DTypeTest, SizesAndNames) {
  EXPECT_EQ(dtype_size(DType::kFloat32), 4u);
  EXPECT_EQ(dtype_size(DType::kFloat16), 2u);
  EXPECT_EQ(dtype_size(DType::kBFloat16), 2u);
  EXPECT_EQ(dtype_size(DType::kFloat64), 8u);
  EXPECT_EQ(dtype_size(DType::kInt32), 4u);
  EXPECT_EQ(dtype_size(DType::kInt64), 8u);
  EXPECT_EQ(dtype_size(DType::kUInt8), 1u);
  for (int i = 0; i < kNumDTypes; ++i) {
    const auto dtype = static_cast<DType>(i);
    EXPECT_EQ(dtype_from_name(dtype_name(dtype)), dtype);
  }
  EXPECT_THROW(dtype_from_name("F8_E4M3"), Error);
  EXPECT_FALSE(is_valid_dtype(-1));
  EXPECT_FALSE(is_valid_dtype(kNumDTypes));
}

TEST(DTypeTest, HalfKnownBitPatterns) {
  EXPECT_EQ(float_to_half(0.0f), 0x0000);
  EXPECT_EQ(float_to_half(-0.0f), 0x8000);
  EXPECT_EQ(float_to_half(1.0f), 0x3c00);
  EXPECT_EQ(float_to_half(1.5f), 0x3e00);
  EXPECT_EQ(float_to_half(-2.0f), 0xc000);
  EXPECT_EQ(float_to_half(65504.0f), 0x7bff);                // largest finite
  EXPECT_EQ(float_to_half(65520.0f), 0x7c00);                // rounds up to Inf
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -24)), 0x0001);   // smallest subnormal
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -14)), 0x0400);   // smallest normal
  EXPECT_EQ(float_to_half(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_EQ(float_to_half(std::nanf("")) & 0x7c00, 0x7c00);
  EXPECT_NE(float_to_half(std::nanf("")) & 0x03ff, 0);
  // Ties go to even: 1 + 2^-11 lies halfway between 1 and 1 + 2^-10.
  EXPECT_EQ(float_to_half(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
  EXPECT_EQ(float_to_half(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
}

TEST(DTypeTest, HalfRoundTripsEveryPattern) {
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const float f = half_to_float(static_cast<uint16_t>(bits));
    if (std::isnan(f)) continue;
    ASSERT_EQ(float_to_half(f), bits) << "pattern " << bits;
  }
}

TEST(DTypeTest, BFloat16RoundsToNearestEven) {
  EXPECT_EQ(float_to_bfloat16(1.5f), 0x3fc0);
  EXPECT_EQ(float_to_bfloat16(1.0f), 0x3f80);
  EXPECT_EQ(bfloat16_to_float(0x3fc0), 1.5f);
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to even (1).
  EXPECT_EQ(float_to_bfloat16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);
  EXPECT_EQ(float_to_bfloat16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);
  EXPECT_TRUE(std::isnan(bfloat16_to_float(float_to_bfloat16(std::nanf("")))));
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const float f = bfloat16_to_float(static_cast<uint16_t>(bits));
    if (std::isnan(f)) continue;
    ASSERT_EQ(float_to_bfloat16(f), bits);
  }
}

}  // namespace
}  // namespace dt::core
