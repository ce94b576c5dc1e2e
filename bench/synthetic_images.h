// The data loader_bench reads when it is given none: a CIFAR-10 binary file
// of random pixels and an image folder of JPEG files (smooth gradients with
// noise, so that they compress as photographs do, not as flat colour or as
// pure noise). Both are written with a fixed seed under a fresh /tmp folder,
// which the caller removes with remove_tree.
#pragma once

#include <stdio.h>  // jpeglib.h needs FILE first
#include <jpeglib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "data/cifar_dataset.h"

namespace dt::bench {

inline std::string make_temp_dir(const char* what) {
  std::string pattern = std::string("/tmp/dt-loader-bench-") + what + ".XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  return pattern;
}

inline void remove_tree(const std::string& dir) {
  const std::string command = "rm -rf '" + dir + "'";
  if (std::system(command.c_str()) != 0) std::fprintf(stderr, "loader_bench: could not remove %s\n", dir.c_str());
}

// dir/test_batch.bin with `images` records.
inline std::string write_synthetic_cifar(long images) {
  const std::string dir = make_temp_dir("cifar");
  const std::string path = dir + "/test_batch.bin";
  std::mt19937 rng(42);
  std::vector<char> record(data::CifarDataset::record_bytes(data::CifarVariant::kCifar10));
  std::ofstream out(path, std::ios::binary);
  for (long i = 0; i < images; ++i) {
    record[0] = static_cast<char>(i % 10);
    for (size_t b = 1; b < record.size(); ++b) record[b] = static_cast<char>(rng() & 0xFF);
    out.write(record.data(), static_cast<std::streamsize>(record.size()));
  }
  if (!out) throw std::runtime_error("cannot write " + path);
  return dir;
}

// dir/class<c>/<i>.jpg: `images` RGB JPEGs of width x height (quality 90,
// libjpeg's default 4:2:0 subsampling, as cameras and ImageNet's files are)
// in 10 classes.
inline std::string write_synthetic_jpeg_folder(long images, int width, int height) {
  const std::string dir = make_temp_dir("jpeg");
  for (int c = 0; c < 10; ++c) ::mkdir((dir + "/class" + std::to_string(c)).c_str(), 0755);
  std::mt19937 rng(7);
  std::vector<unsigned char> pixels(static_cast<size_t>(width) * height * 3);
  for (long i = 0; i < images; ++i) {
    const int phase = static_cast<int>(rng() % 256);
    for (int y = 0; y < height; ++y) {
      for (int x = 0; x < width; ++x) {
        unsigned char* p = &pixels[(static_cast<size_t>(y) * width + x) * 3];
        const int noise = static_cast<int>(rng() % 24);
        p[0] = static_cast<unsigned char>((x * 255 / width + phase + noise) & 0xFF);
        p[1] = static_cast<unsigned char>((y * 255 / height + noise) & 0xFF);
        p[2] = static_cast<unsigned char>(((x + y) * 127 / (width + height) + 2 * phase) & 0xFF);
      }
    }
    const std::string path = dir + "/class" + std::to_string(i % 10) + "/" + std::to_string(i) + ".jpg";
    FILE* file = std::fopen(path.c_str(), "wb");
    if (file == nullptr) throw std::runtime_error("cannot write " + path);
    jpeg_compress_struct cinfo;
    jpeg_error_mgr errors;
    cinfo.err = jpeg_std_error(&errors);
    jpeg_create_compress(&cinfo);
    jpeg_stdio_dest(&cinfo, file);
    cinfo.image_width = static_cast<JDIMENSION>(width);
    cinfo.image_height = static_cast<JDIMENSION>(height);
    cinfo.input_components = 3;
    cinfo.in_color_space = JCS_RGB;
    jpeg_set_defaults(&cinfo);
    jpeg_set_quality(&cinfo, 90, TRUE);
    jpeg_start_compress(&cinfo, TRUE);
    while (cinfo.next_scanline < cinfo.image_height) {
      JSAMPROW row = &pixels[static_cast<size_t>(cinfo.next_scanline) * width * 3];
      jpeg_write_scanlines(&cinfo, &row, 1);
    }
    jpeg_finish_compress(&cinfo);
    jpeg_destroy_compress(&cinfo);
    if (std::fclose(file) != 0) throw std::runtime_error("cannot write " + path);
  }
  return dir;
}

}  // namespace dt::bench
