#pragma once

// Synthetic CIFAR files for the data-layer tests: records of hand-made
// pixels whose every byte says which record, channel, row and column it is.

#include <cstdint>
#include <string>
#include <vector>

#include "data_test_util.h"

namespace dt::data::testing {

// Byte (c, y, x) of the image with id `image`: distinct for neighbouring
// pixels, channels and images, and easy to recompute in a test.
inline unsigned char cifar_pixel(int image, int c, int y, int x) {
  return static_cast<unsigned char>((image * 37 + c * 85 + y * 7 + x) % 256);
}

// One record: the label bytes, then the 3x32x32 image `image` plane by plane.
inline Bytes cifar_record(const Bytes& label_bytes, int image) {
  Bytes record = label_bytes;
  for (int c = 0; c < 3; ++c) {
    for (int y = 0; y < 32; ++y) {
      for (int x = 0; x < 32; ++x) record.push_back(cifar_pixel(image, c, y, x));
    }
  }
  return record;
}

// A CIFAR-10 file of images first_image, first_image + 1, ... with the given
// labels.
inline Bytes cifar10_file(const std::vector<unsigned char>& labels, int first_image) {
  Bytes bytes;
  for (size_t i = 0; i < labels.size(); ++i) {
    const Bytes record = cifar_record({labels[i]}, first_image + static_cast<int>(i));
    bytes.insert(bytes.end(), record.begin(), record.end());
  }
  return bytes;
}

// A CIFAR-100 file: (coarse, fine) label pairs.
inline Bytes cifar100_file(const std::vector<std::pair<unsigned char, unsigned char>>& labels, int first_image) {
  Bytes bytes;
  for (size_t i = 0; i < labels.size(); ++i) {
    const Bytes record = cifar_record({labels[i].first, labels[i].second}, first_image + static_cast<int>(i));
    bytes.insert(bytes.end(), record.begin(), record.end());
  }
  return bytes;
}

}  // namespace dt::data::testing
