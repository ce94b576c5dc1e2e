#include "data/mnist_dataset.h"

#include <sys/stat.h>

#include <cstring>

#include "core/error.h"
#include "data/idx_file.h"

namespace dt::data {

namespace {

using core::DType;
using core::Error;
using core::ErrorCode;

bool exists(const std::string& path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0;
}

// The plain file when it is there (no decompression), else the .gz one.
std::string find_file(const std::string& dir, const std::string& name) {
  const std::string plain = dir + "/" + name;
  const std::string gzip = plain + ".gz";
  if (exists(plain)) return plain;
  if (exists(gzip)) return gzip;
  throw Error(ErrorCode::kNotFound, "neither " + plain + " nor " + gzip + " exists");
}

// Labels as int32, whatever integer type the file used.
core::NDArray labels_to_int32(const core::NDArray& raw) {
  if (raw.dtype() == DType::kInt32) return raw;
  core::NDArray out = core::NDArray::empty(raw.context(), DType::kInt32, raw.shape());
  const uint8_t* src = raw.data_as<uint8_t>();
  int32_t* dst = out.data_as<int32_t>();
  for (size_t i = 0; i < raw.size(); ++i) dst[i] = src[i];
  return out;
}

}  // namespace

MnistDataset::MnistDataset(const std::string& images_path, const std::string& labels_path, int num_classes)
    : num_classes_(num_classes) {
  core::require(num_classes >= 1, ErrorCode::kInvalidArgument,
                "num_classes must be at least 1, not " + std::to_string(num_classes));

  const core::NDArray images = read_idx(images_path);
  if (images.shape().ndim() != 3 || images.dtype() != DType::kUInt8) {
    throw Error(ErrorCode::kIo, "images file " + images_path + " holds a " + core::dtype_name(images.dtype()) +
                                    " array of shape " + images.shape().to_string() +
                                    "; expected 3-d uint8 (count, rows, cols)");
  }
  const core::NDArray raw_labels = read_idx(labels_path);
  if (raw_labels.shape().ndim() != 1 ||
      (raw_labels.dtype() != DType::kUInt8 && raw_labels.dtype() != DType::kInt32)) {
    throw Error(ErrorCode::kIo, "labels file " + labels_path + " holds a " +
                                    core::dtype_name(raw_labels.dtype()) + " array of shape " +
                                    raw_labels.shape().to_string() + "; expected 1-d integers (count)");
  }
  const int64_t image_count = images.shape()[0];
  const int64_t label_count = raw_labels.shape()[0];
  if (image_count != label_count) {
    throw Error(ErrorCode::kIo, "images file " + images_path + " holds " + std::to_string(image_count) +
                                    " images but labels file " + labels_path + " holds " +
                                    std::to_string(label_count) + " labels");
  }

  labels_ = labels_to_int32(raw_labels);
  const int32_t* labels = labels_.data_as<int32_t>();
  for (int64_t i = 0; i < label_count; ++i) {
    if (labels[i] < 0 || labels[i] >= num_classes) {
      throw Error(ErrorCode::kIo, "labels file " + labels_path + ": label " + std::to_string(labels[i]) +
                                      " at index " + std::to_string(i) + " is outside [0, " +
                                      std::to_string(num_classes) + ")");
    }
  }
  images_ = images.reshape({image_count, 1, images.shape()[1], images.shape()[2]});
  size_ = image_count;
}

MnistDataset MnistDataset::from_directory(const std::string& dir, MnistSplit split, int num_classes) {
  const std::string prefix = split == MnistSplit::kTrain ? "train" : "t10k";
  return MnistDataset(find_file(dir, prefix + "-images-idx3-ubyte"), find_file(dir, prefix + "-labels-idx1-ubyte"),
                      num_classes);
}

core::Shape MnistDataset::sample_shape() const {
  return {1, images_.shape()[2], images_.shape()[3]};
}

int32_t MnistDataset::read_sample(int64_t index, uint8_t* pixels) const {
  if (index < 0 || index >= size_) {
    throw Error(ErrorCode::kInvalidArgument,
                "sample index " + std::to_string(index) + " is outside [0, " + std::to_string(size_) + ")");
  }
  const size_t sample_bytes = static_cast<size_t>(images_.shape()[2] * images_.shape()[3]);
  if (sample_bytes > 0) {
    std::memcpy(pixels, images_.data_as<uint8_t>() + static_cast<size_t>(index) * sample_bytes, sample_bytes);
  }
  return labels_.data_as<int32_t>()[index];
}

}  // namespace dt::data
