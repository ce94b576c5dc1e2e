#include "data/augmentation.h"

#include <algorithm>
#include <cmath>

#include "data/splitmix64.h"

namespace dt::data {

namespace {

// The state of a sample's generator. Each coordinate goes through a full
// SplitMix64 step, so that neighbouring seeds, epochs or positions start
// far apart.
uint64_t sample_state(uint64_t seed, int64_t epoch, int64_t position) {
  SplitMix64 from_seed(seed);
  SplitMix64 from_epoch(static_cast<uint64_t>(epoch));
  SplitMix64 from_position(static_cast<uint64_t>(position));
  return from_seed.next() ^ (from_epoch.next() * 0xD1B54A32D192ED03ull) ^
         (from_position.next() * 0x9FB21C651E98DF25ull);
}

// Uniform in [lo, hi), from the top 53 bits of a draw.
double uniform(SplitMix64& rng, double lo, double hi) {
  return lo + (hi - lo) * static_cast<double>(rng.next() >> 11) * 0x1.0p-53;
}

}  // namespace

AugmentDraw draw_augmentation(const Augmentation& augmentation, uint64_t seed, int64_t epoch, int64_t position) {
  SplitMix64 rng(sample_state(seed, epoch, position));
  AugmentDraw draw;
  const int64_t p = augmentation.crop_padding;
  draw.crop_y = p;
  draw.crop_x = p;
  if (p > 0) {
    draw.crop_y = static_cast<int64_t>(rng.below(static_cast<uint64_t>(2 * p + 1)));
    draw.crop_x = static_cast<int64_t>(rng.below(static_cast<uint64_t>(2 * p + 1)));
  }
  if (augmentation.horizontal_flip) draw.flip = (rng.next() >> 63) != 0;
  return draw;
}

CropBox draw_resized_crop(const Augmentation& augmentation, uint64_t seed, int64_t epoch, int64_t position,
                          int64_t height, int64_t width) {
  // Another state than draw_augmentation's for the same sample.
  SplitMix64 rng(sample_state(seed, epoch, position) ^ 0x5851F42D4C957F2Dull);
  const double area = static_cast<double>(height) * static_cast<double>(width);
  const std::array<double, 2>& scale = augmentation.resized_crop_scale;
  const std::array<double, 2>& ratio = augmentation.resized_crop_ratio;
  const double log_lo = std::log(ratio[0]);
  const double log_hi = std::log(ratio[1]);
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target = area * uniform(rng, scale[0], scale[1]);
    const double aspect = std::exp(uniform(rng, log_lo, log_hi));
    const auto w = static_cast<int64_t>(std::nearbyint(std::sqrt(target * aspect)));
    const auto h = static_cast<int64_t>(std::nearbyint(std::sqrt(target / aspect)));
    if (w > 0 && w <= width && h > 0 && h <= height) {
      const auto y = static_cast<int64_t>(rng.below(static_cast<uint64_t>(height - h + 1)));
      const auto x = static_cast<int64_t>(rng.below(static_cast<uint64_t>(width - w + 1)));
      return {y, x, h, w};
    }
  }
  const double in_ratio = static_cast<double>(width) / static_cast<double>(height);
  int64_t w = width;
  int64_t h = height;
  if (in_ratio < ratio[0]) {
    h = static_cast<int64_t>(std::nearbyint(static_cast<double>(w) / ratio[0]));
  } else if (in_ratio > ratio[1]) {
    w = static_cast<int64_t>(std::nearbyint(static_cast<double>(h) * ratio[1]));
  }
  h = std::clamp<int64_t>(h, 1, height);
  w = std::clamp<int64_t>(w, 1, width);
  return {(height - h) / 2, (width - w) / 2, h, w};
}

void transform_image(const uint8_t* src, int64_t channels, int64_t height, int64_t width, int64_t padding,
                     const AugmentDraw& draw, const std::array<float, 256>* tables, float* dst) {
  const int64_t dy = draw.crop_y - padding;
  const int64_t dx = draw.crop_x - padding;
  // Output columns whose source column lies inside the image; the rest
  // (and whole rows outside it) are padding.
  const int64_t x_lo = std::clamp<int64_t>(draw.flip ? dx : -dx, 0, width);
  const int64_t x_hi = std::clamp<int64_t>(draw.flip ? width + dx : width - dx, 0, width);
  for (int64_t c = 0; c < channels; ++c) {
    const std::array<float, 256>& table = tables[c];
    const uint8_t* plane = src + c * height * width;
    for (int64_t y = 0; y < height; ++y, dst += width) {
      const int64_t sy = y + dy;
      if (sy < 0 || sy >= height || x_lo >= x_hi) {
        std::fill(dst, dst + width, table[0]);
        continue;
      }
      const uint8_t* row = plane + sy * width;
      std::fill(dst, dst + x_lo, table[0]);
      if (draw.flip) {
        for (int64_t x = x_lo; x < x_hi; ++x) dst[x] = table[row[width - 1 - x + dx]];
      } else {
        for (int64_t x = x_lo; x < x_hi; ++x) dst[x] = table[row[x + dx]];
      }
      std::fill(dst + x_hi, dst + width, table[0]);
    }
  }
}

}  // namespace dt::data
