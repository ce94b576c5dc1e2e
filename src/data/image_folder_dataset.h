// A folder of labelled images, torchvision's ImageFolder layout:
// root/<class name>/<image files>. The class folders sorted by name are
// labels 0..K-1, and each one's files sorted by name follow one another, so
// a folder always maps to the same samples and labels. Images (JPEG or PNG,
// see image_decode.h) are decoded when read, on the loader's prefetch
// thread, so memory holds the file list and the batches in flight, never
// the data set; each is converted to RGB and resized to the fixed H x W
// given here, so that batches are (B, 3, H, W).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "data/dataset.h"

namespace dt::data {

class ImageFolderDataset final : public Dataset {
 public:
  static constexpr int64_t kChannels = 3;
  // ImageNet's training set, per channel (R, G, B) of x / 255: the
  // statistics torchvision's pretrained models and recipes normalise with.
  static constexpr std::array<float, 3> kMean = {0.485f, 0.456f, 0.406f};
  static constexpr std::array<float, 3> kStd = {0.229f, 0.224f, 0.225f};
  // JPEG's own limit on a side, and far beyond a training input.
  static constexpr int64_t kMaxSide = 65500;

  // Lists the folder; reads no image. Hidden entries (names starting with
  // '.') are skipped everywhere, and plain files directly in root (a README,
  // a LICENSE) are ignored. Errors: Error(kInvalidArgument) for a height or
  // width outside [1, kMaxSide]; Error(kNotFound) when root does not exist;
  // Error(kIo) naming the path when root is not a folder or cannot be
  // listed, holds no class folder, a class folder holds no image, or holds
  // a file whose extension is not .jpg, .jpeg or .png (any case) or
  // something other than a file.
  ImageFolderDataset(const std::string& root, int64_t height, int64_t width);

  int64_t size() const override { return static_cast<int64_t>(files_.size()); }
  core::Shape sample_shape() const override { return {kChannels, height_, width_}; }
  // Decodes the file and resizes the whole image (image_resize.h). A file
  // that cannot be decoded is the decoder's core::Error naming it
  // (decode_image), thrown from here, so from the loader's next().
  int32_t read_sample(int64_t index, uint8_t* pixels) const override;
  bool has_source_images() const override { return true; }
  int32_t read_region(int64_t index, const ChooseBox& choose, uint8_t* pixels) const override;

  // Class names, in label order.
  const std::vector<std::string>& classes() const { return classes_; }
  int num_classes() const { return static_cast<int>(classes_.size()); }
  // Sample index's file and label.
  const std::string& path(int64_t index) const;
  int32_t label(int64_t index) const;

 private:
  struct File {
    std::string path;
    int32_t label;
  };
  const File& file(int64_t index) const;

  int64_t height_;
  int64_t width_;
  std::vector<std::string> classes_;
  std::vector<File> files_;
};

}  // namespace dt::data
