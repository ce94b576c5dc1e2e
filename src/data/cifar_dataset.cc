#include "data/cifar_dataset.h"

#include <sys/stat.h>

#include <cstring>

#include "core/error.h"
#include "core/file_bytes.h"

namespace dt::data {

namespace {

using core::Error;
using core::ErrorCode;

bool exists(const std::string& path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0;
}

std::vector<std::string> file_names(CifarVariant variant, CifarSplit split) {
  if (variant == CifarVariant::kCifar100) return {split == CifarSplit::kTrain ? "train.bin" : "test.bin"};
  if (split == CifarSplit::kTest) return {"test_batch.bin"};
  std::vector<std::string> names;
  for (int i = 1; i <= 5; ++i) names.push_back("data_batch_" + std::to_string(i) + ".bin");
  return names;
}

}  // namespace

CifarDataset::CifarDataset(const std::vector<std::string>& paths, CifarVariant variant) : variant_(variant) {
  core::require(!paths.empty(), ErrorCode::kInvalidArgument, "a CIFAR dataset needs at least one file");
  for (const std::string& path : paths) append_file(path);
}

void CifarDataset::append_file(const std::string& path) {
  const std::vector<uint8_t> bytes = core::read_file_bytes(path, "CIFAR file");
  const size_t record = record_bytes(variant_);
  const size_t labels = label_bytes(variant_);
  if (bytes.empty()) throw Error(ErrorCode::kIo, "CIFAR file " + path + " is empty");
  if (bytes.size() % record != 0) {
    const size_t partial = bytes.size() / record * record;
    throw Error(ErrorCode::kIo, "CIFAR file " + path + " is truncated: its " + std::to_string(bytes.size()) +
                                    " bytes are not a whole number of " + std::to_string(record) +
                                    "-byte records; the record at byte offset " + std::to_string(partial) +
                                    " has only " + std::to_string(bytes.size() - partial) + " bytes");
  }
  const size_t count = bytes.size() / record;
  // CIFAR-100's coarse label (20 superclasses) is checked too: a byte out of
  // its range means the file is not what it claims, even though it is unused.
  const int limit[2] = {variant_ == CifarVariant::kCifar10 ? 10 : 20, 100};
  for (size_t i = 0; i < count; ++i) {
    for (size_t b = 0; b < labels; ++b) {
      const size_t offset = i * record + b;
      if (bytes[offset] >= limit[b]) {
        throw Error(ErrorCode::kIo, "CIFAR file " + path + ": " +
                                        (labels == 1 ? "label" : b == 0 ? "coarse label" : "fine label") + " " +
                                        std::to_string(bytes[offset]) + " at byte offset " + std::to_string(offset) +
                                        " (record " + std::to_string(i) + ") is outside [0, " +
                                        std::to_string(limit[b]) + ")");
      }
    }
  }
  pixels_.reserve(pixels_.size() + count * kPixelBytes);
  labels_.reserve(labels_.size() + count);
  for (size_t i = 0; i < count; ++i) {
    const uint8_t* rec = bytes.data() + i * record;
    labels_.push_back(rec[labels - 1]);
    pixels_.insert(pixels_.end(), rec + labels, rec + record);
  }
}

CifarDataset CifarDataset::from_directory(const std::string& dir, CifarVariant variant, CifarSplit split) {
  const std::vector<std::string> names = file_names(variant, split);
  const std::string archive_dir =
      dir + (variant == CifarVariant::kCifar10 ? "/cifar-10-batches-bin" : "/cifar-100-binary");
  std::string base;
  if (exists(dir + "/" + names.front())) {
    base = dir;
  } else if (exists(archive_dir + "/" + names.front())) {
    base = archive_dir;
  } else {
    throw Error(ErrorCode::kNotFound, "neither " + dir + "/" + names.front() + " nor " + archive_dir + "/" +
                                          names.front() + " exists");
  }
  std::vector<std::string> paths;
  for (const std::string& name : names) paths.push_back(base + "/" + name);
  return CifarDataset(paths, variant);
}

int32_t CifarDataset::read_sample(int64_t index, uint8_t* pixels) const {
  if (index < 0 || index >= size()) {
    throw Error(ErrorCode::kInvalidArgument,
                "sample index " + std::to_string(index) + " is outside [0, " + std::to_string(size()) + ")");
  }
  std::memcpy(pixels, pixels_.data() + static_cast<size_t>(index) * kPixelBytes, kPixelBytes);
  return labels_[static_cast<size_t>(index)];
}

}  // namespace dt::data
