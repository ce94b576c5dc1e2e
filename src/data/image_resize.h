// Bilinear resizing of decoded images to the loader's fixed (3, H, W), from
// the whole image or from a box of it (the random resized crop). Our own,
// small and exact on hand-made images, rather than a dependency: the loader
// needs one kernel, with the layout change from the decoders' interleaved
// rows to channel planes folded in.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "data/image_decode.h"

namespace dt::data {

// A box of a source image: its top-left pixel (y, x) and its size.
struct CropBox {
  int64_t y = 0;
  int64_t x = 0;
  int64_t height = 0;
  int64_t width = 0;
};

// Resizes `box` of an interleaved (height, width, channels) uint8 image to a
// planar (channels, out_height, out_width) one. Pixel centres are aligned
// (OpenCV's INTER_LINEAR, PyTorch's align_corners=False): output pixel x
// samples the box at x' = (x + 0.5) * box.width / out_width - 0.5, clamped
// to the box, interpolating between its two neighbours, and the result is
// rounded to the nearest byte. No antialiasing filter when shrinking, as
// with torchvision's antialias=False. A box of the output's size is an
// exact copy. The box must lie inside the image and not be empty.
void resize_bilinear(const uint8_t* src, int64_t channels, int64_t height, int64_t width, const CropBox& box,
                     int64_t out_height, int64_t out_width, uint8_t* dst);

// Resizes the box choose(image.height, image.width) of a decoded image to a
// planar (3, out_height, out_width) one: how the datasets with source images
// serve a sample or a random resized crop. Error(kInternal) naming `name`
// (the image's file or record) for a box that is empty or leaves the image.
void resize_chosen_box(const DecodedImage& image, const std::function<CropBox(int64_t, int64_t)>& choose,
                       int64_t out_height, int64_t out_width, const std::string& name, uint8_t* dst);

}  // namespace dt::data
