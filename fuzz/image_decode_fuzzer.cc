// JPEG and PNG files as the image-folder dataset reads them: decode_image
// (libjpeg-turbo or libpng, chosen by the first bytes), then the bilinear
// resize of the whole image to the loader's 32x32 sample.
#include <vector>

#include "core/error.h"
#include "data/image_decode.h"
#include "data/image_resize.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using dt::fuzz::require;
  const std::string& path = dt::fuzz::InputFile::write(data, size);
  try {
    const dt::data::DecodedImage image = dt::data::decode_image(path);
    require(image.height >= 1 && image.width >= 1 && image.height * image.width <= dt::data::kMaxPixels,
            "a decoded image of impossible size");
    require(image.pixels.size() == static_cast<size_t>(image.height * image.width * 3),
            "the pixels do not match the image's size");
    constexpr int64_t kSide = 32;
    std::vector<uint8_t> sample(3 * kSide * kSide);
    dt::data::resize_bilinear(image.pixels.data(), 3, image.height, image.width,
                              dt::data::CropBox{0, 0, image.height, image.width}, kSide, kSide, sample.data());
  } catch (const dt::core::Error&) {
  }
  return 0;
}
