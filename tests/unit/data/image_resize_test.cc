#include "data/image_resize.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace dt::data {
namespace {

using Pixels = std::vector<uint8_t>;

Pixels resized(const Pixels& src, int64_t channels, int64_t height, int64_t width, const CropBox& box,
               int64_t out_height, int64_t out_width) {
  Pixels out(static_cast<size_t>(channels * out_height * out_width), 0xEE);
  resize_bilinear(src.data(), channels, height, width, box, out_height, out_width, out.data());
  return out;
}

// 2x2 to 4x4: the outer samples clamp to the edge, the inner ones sit a
// quarter of the way between two pixels.
TEST(ImageResizeTest, UpscalesWithAlignedPixelCentres) {
  const Pixels src = {0, 100,  //
                      200, 40};
  EXPECT_EQ(resized(src, 1, 2, 2, {0, 0, 2, 2}, 4, 4), (Pixels{0,   25,  75, 100,  //
                                                               50,  59,  76, 85,   //
                                                               150, 126, 79, 55,   //
                                                               200, 160, 80, 40}));
}

// 4 to 2 on each axis samples at 0.5 and 2.5: the mean of each 2x2 block.
TEST(ImageResizeTest, DownscalesToTheMeanOfEachBlock) {
  const Pixels src = {10, 20, 100, 100,  //
                      30, 40, 100, 100,  //
                      0,  0,  7,   9,    //
                      0,  0,  11,  13};
  EXPECT_EQ(resized(src, 1, 4, 4, {0, 0, 4, 4}, 2, 2), (Pixels{25, 100, 0, 10}));
}

// Interleaved RGB in, channel planes out; the same size is an exact copy.
TEST(ImageResizeTest, SameSizeIsAnExactCopyIntoPlanes) {
  const Pixels src = {1, 2, 3, 4, 5, 6, 7, 8, 9,  //
                      10, 11, 12, 13, 14, 15, 16, 17, 18};
  EXPECT_EQ(resized(src, 3, 2, 3, {0, 0, 2, 3}, 2, 3), (Pixels{1, 4, 7, 10, 13, 16,  //
                                                               2, 5, 8, 11, 14, 17,  //
                                                               3, 6, 9, 12, 15, 18}));
}

// A box is resized alone: its edge pixels clamp to the box, not to the
// image around it.
TEST(ImageResizeTest, ResizesOnlyTheBox) {
  Pixels src(25);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 10);
  // Rows 1-2, columns 2-3: 70, 80 / 120, 130.
  EXPECT_EQ(resized(src, 1, 5, 5, {1, 2, 2, 2}, 2, 2), (Pixels{70, 80, 120, 130}));
  EXPECT_EQ(resized(src, 1, 5, 5, {1, 2, 2, 2}, 1, 4), (Pixels{95, 98, 103, 105}));
  EXPECT_EQ(resized(src, 1, 5, 5, {4, 4, 1, 1}, 2, 3), (Pixels(6, 240)));
}

}  // namespace
}  // namespace dt::data
