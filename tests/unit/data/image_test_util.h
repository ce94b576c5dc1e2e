#pragma once

// Image files for the image-folder tests, written with the libraries the
// dataset decodes with (libjpeg-turbo and libpng), and a scratch folder tree
// removed with everything in it.

#include <ftw.h>
#include <stdio.h>  // jpeglib.h needs FILE first
#include <jpeglib.h>
#include <png.h>
#include <sys/stat.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "data_test_util.h"

namespace dt::data::testing {

// A fresh folder under /tmp, removed with its whole tree.
class TempTree {
 public:
  TempTree() {
    char pattern[] = "/tmp/dt-image-test.XXXXXX";
    if (::mkdtemp(pattern) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempTree() {
    ::nftw(
        path_.c_str(), [](const char* path, const struct stat*, int, FTW*) { return ::remove(path); }, 16,
        FTW_DEPTH | FTW_PHYS);
  }
  TempTree(const TempTree&) = delete;
  TempTree& operator=(const TempTree&) = delete;

  const std::string& path() const { return path_; }
  // root/<relative>; mkdir for folders.
  std::string file(const std::string& relative) const { return path_ + "/" + relative; }
  std::string mkdir(const std::string& relative) const {
    const std::string dir = file(relative);
    if (::mkdir(dir.c_str(), 0700) != 0) throw std::runtime_error("mkdir failed for " + dir);
    return dir;
  }

 private:
  std::string path_;
};

// An interleaved 8-bit image of 1 (grey), 3 (RGB) or 4 (RGBA) channels.
struct TestImage {
  int height;
  int width;
  int channels;
  Bytes pixels;
};

// Pixel (y, x) channel c of a test image: distinct across neighbours.
inline unsigned char pattern_pixel(int y, int x, int c) {
  return static_cast<unsigned char>((y * 29 + x * 11 + c * 83 + 5) % 256);
}

inline TestImage pattern_image(int height, int width, int channels) {
  TestImage image{height, width, channels, {}};
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      for (int c = 0; c < channels; ++c) image.pixels.push_back(pattern_pixel(y, x, c));
    }
  }
  return image;
}

inline Bytes png_bytes(const TestImage& image) {
  png_image png;
  std::memset(&png, 0, sizeof png);
  png.version = PNG_IMAGE_VERSION;
  png.width = static_cast<png_uint_32>(image.width);
  png.height = static_cast<png_uint_32>(image.height);
  png.format = image.channels == 1 ? PNG_FORMAT_GRAY : image.channels == 3 ? PNG_FORMAT_RGB : PNG_FORMAT_RGBA;
  png_alloc_size_t size = 0;
  if (!png_image_write_get_memory_size(png, size, 0, image.pixels.data(), 0, nullptr)) {
    throw std::runtime_error(std::string("png size: ") + png.message);
  }
  Bytes bytes(size);
  if (!png_image_write_to_memory(&png, bytes.data(), &size, 0, image.pixels.data(), 0, nullptr)) {
    throw std::runtime_error(std::string("png write: ") + png.message);
  }
  bytes.resize(size);
  return bytes;
}

// Baseline JPEG at quality 100 without chroma subsampling, so that decoded
// pixels stay within a few levels of the original.
inline Bytes jpeg_bytes(const TestImage& image) {
  jpeg_compress_struct cinfo;
  jpeg_error_mgr errors;
  cinfo.err = jpeg_std_error(&errors);
  jpeg_create_compress(&cinfo);
  unsigned char* out = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&cinfo, &out, &size);
  cinfo.image_width = static_cast<JDIMENSION>(image.width);
  cinfo.image_height = static_cast<JDIMENSION>(image.height);
  cinfo.input_components = image.channels;
  cinfo.in_color_space = image.channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_set_defaults(&cinfo);
  jpeg_set_quality(&cinfo, 100, TRUE);
  for (int i = 0; i < cinfo.num_components; ++i) {
    cinfo.comp_info[i].h_samp_factor = 1;
    cinfo.comp_info[i].v_samp_factor = 1;
  }
  jpeg_start_compress(&cinfo, TRUE);
  while (cinfo.next_scanline < cinfo.image_height) {
    JSAMPROW row = const_cast<unsigned char*>(image.pixels.data()) +
                   static_cast<size_t>(cinfo.next_scanline) * image.width * image.channels;
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  jpeg_destroy_compress(&cinfo);
  Bytes bytes(out, out + size);
  std::free(out);
  return bytes;
}

}  // namespace dt::data::testing
