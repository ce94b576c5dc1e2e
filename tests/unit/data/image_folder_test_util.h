// What the image folder and image decoding tests share: their includes, the
// image test helpers they use, and crop box comparison.
#pragma once

#include "data/image_folder_dataset.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "data/augmentation.h"
#include "data/batch_loader.h"
#include "data/image_decode.h"
#include "data/image_resize.h"
#include "image_test_util.h"

namespace dt::data::image_folder_test {

using core::ErrorCode;
using testing::Bytes;
using testing::jpeg_bytes;
using testing::pattern_image;
using testing::pattern_pixel;
using testing::png_bytes;
using testing::TempTree;
using testing::TestImage;
using testing::thrown_by;
using testing::write_plain;

inline bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

inline bool same(const CropBox& a, const CropBox& b) {
  return a.y == b.y && a.x == b.x && a.height == b.height && a.width == b.width;
}

}  // namespace dt::data::image_folder_test
