// The random image transforms the batch loader applies on its prefetch
// thread, torchvision's RandomCrop(size, padding) and RandomHorizontalFlip
// as CIFAR recipes use them, and RandomResizedCrop as ImageNet recipes do. A sample's draws are a pure function of
// (seed, epoch, its position in the epoch), not of how many samples the
// thread has seen, so the same seed gives the same batches on every run,
// whatever was abandoned before or how the work is scheduled.
#pragma once

#include <array>
#include <cstdint>

#include "data/image_resize.h"

namespace dt::data {

struct Augmentation {
  // 0: none. p > 0: pad the image with p zero pixels on every side and
  // crop an image of the original size at a uniformly drawn offset
  // (p = 4 for 32x32 CIFAR images). Zero pixels are raw 0 bytes, normalised
  // like any other pixel, as torchvision pads before normalising.
  int64_t crop_padding = 0;
  // Mirror left-right with probability 1/2.
  bool horizontal_flip = false;
  // torchvision's RandomResizedCrop(size, scale, ratio): a box covering a
  // uniformly drawn fraction of the source image's area (resized_crop_scale)
  // with an aspect ratio (width / height) drawn log-uniformly from
  // resized_crop_ratio, at a uniform position, resized to the sample's
  // H x W. The defaults are torchvision's. It needs a dataset with source
  // images (Dataset::has_source_images) and comes before the other two.
  bool random_resized_crop = false;
  std::array<double, 2> resized_crop_scale = {0.08, 1.0};
  std::array<double, 2> resized_crop_ratio = {3.0 / 4.0, 4.0 / 3.0};

  bool enabled() const { return crop_padding > 0 || horizontal_flip || random_resized_crop; }
};

// What one sample drew. The crop's top-left corner in the padded image is
// (crop_y, crop_x), each in [0, 2 * crop_padding]; crop_padding on both is
// the centre, the image unchanged.
struct AugmentDraw {
  int64_t crop_y = 0;
  int64_t crop_x = 0;
  bool flip = false;
};

// The draws of the sample at `position` of epoch `epoch` in stream `seed`.
// Without a crop, crop_y = crop_x = augmentation.crop_padding (= 0).
AugmentDraw draw_augmentation(const Augmentation& augmentation, uint64_t seed, int64_t epoch, int64_t position);

// The random resized crop's box in a height x width source image for the
// sample at `position` of epoch `epoch` in stream `seed`, drawn from a
// stream of its own so that the other draws stay what they were.
// torchvision's algorithm: up to 10 tries of an area fraction and a ratio,
// w = round(sqrt(area * ratio)), h = round(sqrt(area / ratio)) (half to
// even, as Python's round), the first box that fits placed uniformly;
// after 10 misses, the largest centred box whose ratio is clamped to the
// range.
CropBox draw_resized_crop(const Augmentation& augmentation, uint64_t seed, int64_t epoch, int64_t position,
                          int64_t height, int64_t width);

// One (channels, height, width) uint8 image to float: output pixel
// (c, y, x) is tables[c][v] for v the byte at (y + crop_y - padding,
// x' + crop_x - padding) of `src`, x' = width - 1 - x when flipped else x,
// and v = 0 outside the image: the crop is taken first, then flipped.
// tables holds one 256-entry lookup per channel.
void transform_image(const uint8_t* src, int64_t channels, int64_t height, int64_t width, int64_t padding,
                     const AugmentDraw& draw, const std::array<float, 256>* tables, float* dst);

}  // namespace dt::data
