// The CIFAR-10 and CIFAR-100 binary format ("CIFAR-10 binary version" on
// Krizhevsky's page): fixed-size records of label byte(s) and 3072 pixel
// bytes, a 32x32 image stored as its red plane, then green, then blue, each
// row-major, which is already the (3, 32, 32) layout the loader yields.
//  - CIFAR-10: 1 label byte (0-9) + 3072 = 3073 bytes per record;
//    data_batch_1.bin ... data_batch_5.bin (train), test_batch.bin (test).
//  - CIFAR-100: a coarse (0-19) and a fine (0-99) label byte + 3072 = 3074;
//    train.bin, test.bin. The fine label is the class.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "data/dataset.h"

namespace dt::data {

enum class CifarVariant { kCifar10, kCifar100 };
enum class CifarSplit { kTrain, kTest };

class CifarDataset final : public Dataset {
 public:
  static constexpr int64_t kChannels = 3;
  static constexpr int64_t kSide = 32;
  static constexpr size_t kPixelBytes = kChannels * kSide * kSide;
  // CIFAR-10's training set, per channel (R, G, B) of x / 255: the usual
  // normalisation for both variants (CIFAR-100's own differ in the second
  // decimal). The std is that of all training pixels, not the smaller mean
  // of per-image stds that some recipes copy.
  static constexpr std::array<float, 3> kMean = {0.4914f, 0.4822f, 0.4465f};
  static constexpr std::array<float, 3> kStd = {0.2470f, 0.2435f, 0.2616f};

  // Reads every file whole, in the order given, into one set. Errors name
  // the file: Error(kNotFound) when it does not exist; Error(kIo) when it
  // cannot be read, is empty, its size is not a whole number of records
  // (naming the byte offset where the partial record starts), or a label
  // byte lies outside its range (naming its byte offset).
  // Error(kInvalidArgument) for an empty list.
  CifarDataset(const std::vector<std::string>& paths, CifarVariant variant);

  // The standard file names of `split` in `dir`, or in the folder that the
  // official archive unpacks to inside it (cifar-10-batches-bin,
  // cifar-100-binary). Error(kNotFound) naming the candidates when neither
  // holds the first file.
  static CifarDataset from_directory(const std::string& dir, CifarVariant variant, CifarSplit split);

  static size_t record_bytes(CifarVariant variant) { return label_bytes(variant) + kPixelBytes; }
  static size_t label_bytes(CifarVariant variant) { return variant == CifarVariant::kCifar10 ? 1 : 2; }
  static int num_classes(CifarVariant variant) { return variant == CifarVariant::kCifar10 ? 10 : 100; }

  int64_t size() const override { return static_cast<int64_t>(labels_.size()); }
  core::Shape sample_shape() const override { return {kChannels, kSide, kSide}; }
  int32_t read_sample(int64_t index, uint8_t* pixels) const override;

  CifarVariant variant() const { return variant_; }
  int num_classes() const { return num_classes(variant_); }

 private:
  void append_file(const std::string& path);

  CifarVariant variant_;
  std::vector<uint8_t> pixels_;  // size() * kPixelBytes, records without their labels
  std::vector<int32_t> labels_;
};

}  // namespace dt::data
