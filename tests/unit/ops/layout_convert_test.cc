// NCHW <-> NHWC: the shared index functions (ops/layout_index.h, which the
// CUDA kernels call too) against the definition of each layout, and the
// conversion op on the CPU against a hand-computed example, round trips of
// odd sizes in every dtype a net's activations use, and bad arguments.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <set>
#include <vector>

#include "core/context.h"
#include "core/dtype.h"
#include "core/ndarray.h"
#include "error_code_of.h"
#include "ops/layout_convert.h"
#include "ops/tensor_layout.h"

namespace dt::ops {
namespace {

using core::DType;
using core::NDArray;
using test_support::code_of;
constexpr TensorLayout kNCHW = TensorLayout::kNCHW;
constexpr TensorLayout kNHWC = TensorLayout::kNHWC;

TEST(TensorLayoutTest, OffsetsFollowEachLayoutsDefinition) {
  const int64_t C = 3, H = 2, W = 5;
  EXPECT_EQ(layout_offset(kNCHW, 1, 2, 1, 4, C, H, W), ((1 * C + 2) * H + 1) * W + 4);
  EXPECT_EQ(layout_offset(kNHWC, 1, 2, 1, 4, C, H, W), ((1 * H + 1) * W + 4) * C + 2);
  EXPECT_EQ(layout_offset(kNHWC, 0, 1, 0, 0, C, H, W), 1);  // channels are neighbours
  EXPECT_EQ(layout_offset(kNCHW, 0, 0, 0, 1, C, H, W), 1);  // columns are
}

// Every element of odd-sized arrays: the offsets are a permutation, and the
// channel, plane base/step and gather index agree with layout_offset.
TEST(TensorLayoutTest, IndexFunctionsAgreeOnEveryElement) {
  const int64_t N = 2, C = 5, H = 3, W = 7, plane = H * W;
  for (const TensorLayout layout : {kNCHW, kNHWC}) {
    std::set<int64_t> seen;
    for (int64_t n = 0; n < N; ++n) {
      for (int64_t c = 0; c < C; ++c) {
        for (int64_t h = 0; h < H; ++h) {
          for (int64_t w = 0; w < W; ++w) {
            const int64_t at = layout_offset(layout, n, c, h, w, C, H, W);
            seen.insert(at);
            ASSERT_EQ(layout_channel(layout, at, C, plane), c) << layout_name(layout);
            ASSERT_EQ(layout_channel<uint32_t>(layout, static_cast<uint32_t>(at), C, plane), c);
            const LayoutCoords back = layout_coords(layout, at, C, H, W);
            ASSERT_EQ(back.n, n);
            ASSERT_EQ(back.c, c);
            ASSERT_EQ(back.h, h);
            ASSERT_EQ(back.w, w);
            ASSERT_EQ(layout_plane_base(layout, n, c, C, plane) + (h * W + w) * layout_plane_step(layout, C), at)
                << layout_name(layout);
            const TensorLayout other = layout == kNCHW ? kNHWC : kNCHW;
            const int64_t there = layout_offset(other, n, c, h, w, C, H, W);
            ASSERT_EQ(layout_source_offset(there, other, layout, C, H, W), at);
            ASSERT_EQ(layout_source_offset(at, layout, layout, C, H, W), at);
          }
        }
      }
    }
    EXPECT_EQ(seen.size(), static_cast<size_t>(N * C * H * W));
    EXPECT_EQ(*seen.rbegin(), N * C * H * W - 1);
  }
}

TEST(TensorLayoutTest, NamesShapesAndParsing) {
  EXPECT_STREQ(layout_name(kNCHW), "NCHW");
  EXPECT_EQ(parse_layout("NHWC", "x"), kNHWC);
  EXPECT_EQ(parse_layout("NCHW", "x"), kNCHW);
  std::string message;
  EXPECT_EQ(code_of([] { parse_layout("nhwc", "Conv2D 'c'"); }, &message), core::ErrorCode::kInvalidArgument);
  EXPECT_NE(message.find("Conv2D 'c'"), std::string::npos) << message;
  EXPECT_EQ(layout_shape(kNHWC, 2, 3, 4, 5), core::Shape({2, 4, 5, 3}));
  const LogicalDims d = logical_dims(kNHWC, core::Shape({2, 4, 5, 3}));
  EXPECT_EQ(d.N, 2);
  EXPECT_EQ(d.C, 3);
  EXPECT_EQ(d.H, 4);
  EXPECT_EQ(d.W, 5);
}

class LayoutConvertTest : public ::testing::Test {
 protected:
  NDArray array(DType dtype, const core::Shape& shape) const { return NDArray::empty(cpu_, dtype, shape); }
  std::shared_ptr<core::Context> cpu_ = core::make_cpu_context();
};

TEST_F(LayoutConvertTest, HandComputedExample) {
  // x[0, c, h, w] = 6c + 3h + w; in NHWC the channels of each (h, w) are adjacent.
  NDArray x = array(DType::kFloat32, core::Shape({1, 2, 2, 3}));
  for (int i = 0; i < 12; ++i) x.data_as<float>()[i] = static_cast<float>(i);
  NDArray y = array(DType::kFloat32, core::Shape({1, 2, 3, 2}));
  convert_layout(y, kNHWC, x, kNCHW);
  const std::vector<float> expected{0, 6, 1, 7, 2, 8, 3, 9, 4, 10, 5, 11};
  EXPECT_EQ(std::vector<float>(y.data_as<float>(), y.data_as<float>() + 12), expected);
  NDArray back = array(DType::kFloat32, x.shape());
  convert_layout(back, kNCHW, y, kNHWC);
  for (int i = 0; i < 12; ++i) EXPECT_EQ(back.data_as<float>()[i], static_cast<float>(i));
}

// Random bit patterns (NaN payloads and all): a conversion moves bits.
TEST_F(LayoutConvertTest, RoundTripIsTheIdentityForOddSizesInEveryDtype) {
  std::mt19937 gen(38);
  for (const DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    for (const LogicalDims d : {LogicalDims{3, 5, 7, 3}, LogicalDims{1, 1, 1, 1}, LogicalDims{2, 13, 1, 9},
                                LogicalDims{1, 3, 11, 1}}) {
      NDArray x = array(dtype, layout_shape(kNCHW, d.N, d.C, d.H, d.W));
      auto* bytes = static_cast<unsigned char*>(x.data());
      for (size_t i = 0; i < x.nbytes(); ++i) bytes[i] = static_cast<unsigned char>(gen());
      NDArray nhwc = array(dtype, layout_shape(kNHWC, d.N, d.C, d.H, d.W));
      NDArray back = array(dtype, x.shape());
      convert_layout(nhwc, kNHWC, x, kNCHW);
      convert_layout(back, kNCHW, nhwc, kNHWC);
      EXPECT_EQ(std::memcmp(back.data(), x.data(), x.nbytes()), 0) << core::dtype_name(dtype);
      // And element by element against the definition.
      const size_t es = core::dtype_size(dtype);
      const auto* out = static_cast<const unsigned char*>(nhwc.data());
      for (int64_t n = 0; n < d.N; ++n)
        for (int64_t c = 0; c < d.C; ++c)
          for (int64_t h = 0; h < d.H; ++h)
            for (int64_t w = 0; w < d.W; ++w) {
              const int64_t from = layout_offset(kNCHW, n, c, h, w, d.C, d.H, d.W);
              const int64_t to = layout_offset(kNHWC, n, c, h, w, d.C, d.H, d.W);
              ASSERT_EQ(std::memcmp(out + to * es, bytes + from * es, es), 0);
            }
    }
  }
}

TEST_F(LayoutConvertTest, TheSameLayoutIsACopy) {
  NDArray x = array(DType::kFloat32, core::Shape({1, 2, 1, 2}));
  for (int i = 0; i < 4; ++i) x.data_as<float>()[i] = 1.5f * i;
  NDArray y = array(DType::kFloat32, x.shape());
  convert_layout(y, kNHWC, x, kNHWC);
  EXPECT_EQ(std::memcmp(y.data(), x.data(), x.nbytes()), 0);
}

TEST_F(LayoutConvertTest, BadArgumentsAreClearErrors) {
  NDArray x = array(DType::kFloat32, core::Shape({1, 2, 3, 4}));
  std::string message;
  EXPECT_EQ(code_of([&] { convert_layout(array(DType::kFloat32, core::Shape({1, 2, 3, 4})), kNHWC, x, kNCHW); },
                    &message),
            core::ErrorCode::kShapeMismatch);
  EXPECT_NE(message.find("(1, 3, 4, 2)"), std::string::npos) << message;
  EXPECT_EQ(code_of([&] { convert_layout(array(DType::kFloat16, core::Shape({1, 3, 4, 2})), kNHWC, x, kNCHW); }),
            core::ErrorCode::kDtypeMismatch);
  EXPECT_EQ(code_of([&] {
              convert_layout(array(DType::kFloat32, core::Shape({6, 4})), kNHWC,
                             array(DType::kFloat32, core::Shape({6, 4})), kNCHW);
            }),
            core::ErrorCode::kShapeMismatch);
}

}  // namespace
}  // namespace dt::ops
