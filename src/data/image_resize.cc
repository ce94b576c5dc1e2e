#include "data/image_resize.h"

#include <algorithm>
#include <vector>

#include "core/error.h"

namespace dt::data {

namespace {

// For each output coordinate, the two source coordinates it blends and the
// weight of the second.
struct Taps {
  std::vector<int64_t> lo;
  std::vector<int64_t> hi;
  std::vector<float> weight;
};

Taps taps(int64_t start, int64_t size, int64_t out_size) {
  Taps t;
  t.lo.resize(static_cast<size_t>(out_size));
  t.hi.resize(static_cast<size_t>(out_size));
  t.weight.resize(static_cast<size_t>(out_size));
  // In double, so that the ratios of small hand-made cases (1/4, 3/4) and
  // an identity resize come out exact.
  const double scale = static_cast<double>(size) / static_cast<double>(out_size);
  for (int64_t i = 0; i < out_size; ++i) {
    const double at = std::clamp((static_cast<double>(i) + 0.5) * scale - 0.5, 0.0, static_cast<double>(size - 1));
    const int64_t lo = std::min<int64_t>(static_cast<int64_t>(at), size - 1);
    const size_t k = static_cast<size_t>(i);
    t.lo[k] = start + lo;
    t.hi[k] = start + std::min<int64_t>(lo + 1, size - 1);
    t.weight[k] = static_cast<float>(at - static_cast<double>(lo));
  }
  return t;
}

}  // namespace

void resize_bilinear(const uint8_t* src, int64_t channels, int64_t /*height*/, int64_t width, const CropBox& box,
                     int64_t out_height, int64_t out_width, uint8_t* dst) {
  const Taps ys = taps(box.y, box.height, out_height);
  const Taps xs = taps(box.x, box.width, out_width);
  const int64_t row_bytes = width * channels;
  const size_t plane = static_cast<size_t>(out_height * out_width);
  for (int64_t y = 0; y < out_height; ++y) {
    const size_t ky = static_cast<size_t>(y);
    const uint8_t* top = src + ys.lo[ky] * row_bytes;
    const uint8_t* bottom = src + ys.hi[ky] * row_bytes;
    const float wy = ys.weight[ky];
    for (int64_t x = 0; x < out_width; ++x) {
      const size_t kx = static_cast<size_t>(x);
      const int64_t left = xs.lo[kx] * channels;
      const int64_t right = xs.hi[kx] * channels;
      const float wx = xs.weight[kx];
      for (int64_t c = 0; c < channels; ++c) {
        const float upper = top[left + c] + wx * (static_cast<float>(top[right + c]) - top[left + c]);
        const float lower = bottom[left + c] + wx * (static_cast<float>(bottom[right + c]) - bottom[left + c]);
        const float v = upper + wy * (lower - upper);
        dst[static_cast<size_t>(c) * plane + ky * static_cast<size_t>(out_width) + kx] =
            static_cast<uint8_t>(std::clamp(v, 0.0f, 255.0f) + 0.5f);
      }
    }
  }
}

void resize_chosen_box(const DecodedImage& image, const std::function<CropBox(int64_t, int64_t)>& choose,
                       int64_t out_height, int64_t out_width, const std::string& name, uint8_t* dst) {
  const CropBox box = choose(image.height, image.width);
  if (box.height < 1 || box.width < 1 || box.y < 0 || box.x < 0 || box.y + box.height > image.height ||
      box.x + box.width > image.width) {
    throw core::Error(core::ErrorCode::kInternal, "crop box outside the " + std::to_string(image.width) + "x" +
                                                      std::to_string(image.height) + " image " + name);
  }
  resize_bilinear(image.pixels.data(), 3, image.height, image.width, box, out_height, out_width, dst);
}

}  // namespace dt::data
