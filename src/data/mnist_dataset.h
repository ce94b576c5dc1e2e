// An image-classification dataset stored as an IDX pair in the MNIST layout:
// an images file (N, rows, cols) of uint8 and a labels file (N) of class ids.
// MNIST, Fashion-MNIST and KMNIST all ship this way.
#pragma once

#include <cstdint>
#include <string>

#include "core/ndarray.h"
#include "data/dataset.h"

namespace dt::data {

enum class MnistSplit { kTrain, kTest };

class MnistDataset final : public Dataset {
 public:
  static constexpr int kDefaultNumClasses = 10;

  // Reads both files (plain or gzip, see read_idx) and checks them against
  // each other. Errors name the file(s): those of read_idx; Error(kIo) when
  // the images are not 3-d uint8, the labels not 1-d integers, the two counts
  // differ, or a label lies outside [0, num_classes).
  // Error(kInvalidArgument) for num_classes < 1.
  MnistDataset(const std::string& images_path, const std::string& labels_path,
               int num_classes = kDefaultNumClasses);

  // The standard file names inside `dir`: {train,t10k}-images-idx3-ubyte and
  // {train,t10k}-labels-idx1-ubyte, each taken plain if present, else with
  // ".gz". Error(kNotFound) naming both candidates when neither exists.
  static MnistDataset from_directory(const std::string& dir, MnistSplit split,
                                     int num_classes = kDefaultNumClasses);

  int64_t size() const override { return size_; }
  core::Shape sample_shape() const override;  // (1, rows, cols)
  int32_t read_sample(int64_t index, uint8_t* pixels) const override;

  int num_classes() const { return num_classes_; }
  // (N, 1, rows, cols) uint8 and (N) int32 on the CPU. Copies of this
  // dataset share them; nothing here writes to them after construction.
  const core::NDArray& images() const { return images_; }
  const core::NDArray& labels() const { return labels_; }

 private:
  core::NDArray images_;
  core::NDArray labels_;
  int64_t size_ = 0;
  int num_classes_ = kDefaultNumClasses;
};

}  // namespace dt::data
