#include "data/recordio_dataset.h"

#include <sys/stat.h>

#include "core/error.h"
#include "data/image_decode.h"
#include "data/image_resize.h"
#include "data/recordio_index.h"

namespace dt::data {

namespace {

using core::Error;
using core::ErrorCode;

}  // namespace

RecordIODataset::RecordIODataset(const std::string& rec_path, const std::string& idx_path, int64_t height,
                                 int64_t width)
    : reader_(rec_path), height_(height), width_(width) {
  core::require(height >= 1 && height <= kMaxSide && width >= 1 && width <= kMaxSide, ErrorCode::kInvalidArgument,
                "RecordIO samples need a height and width in [1, " + std::to_string(kMaxSide) + "], not " +
                    std::to_string(height) + " x " + std::to_string(width));
  offsets_ = idx_path.empty() ? reader_.scan() : read_recordio_index(idx_path, reader_.file_size());
  if (offsets_.empty()) throw Error(ErrorCode::kIo, "RecordIO file " + rec_path + " holds no record");
}

std::string RecordIODataset::sibling_index(const std::string& rec_path) {
  const size_t slash = rec_path.rfind('/');
  const size_t dot = rec_path.rfind('.');
  const bool has_extension = dot != std::string::npos && (slash == std::string::npos || dot > slash);
  const std::string idx = (has_extension ? rec_path.substr(0, dot) : rec_path) + ".idx";
  struct stat info {};
  return ::stat(idx.c_str(), &info) == 0 && S_ISREG(info.st_mode) ? idx : std::string();
}

int64_t RecordIODataset::offset(int64_t index) const {
  if (index < 0 || index >= size()) {
    throw Error(ErrorCode::kInvalidArgument,
                "sample index " + std::to_string(index) + " is outside [0, " + std::to_string(size()) + ")");
  }
  return offsets_[static_cast<size_t>(index)];
}

ImageRecord RecordIODataset::header(int64_t index) const {
  const int64_t at = offset(index);
  std::vector<uint8_t> payload;
  reader_.read_record(at, &payload);
  ImageRecord record = parse_image_record(payload, reader_.where(at));
  record.image = nullptr;
  record.image_size = 0;
  return record;
}

int32_t RecordIODataset::read_sample(int64_t index, uint8_t* pixels) const {
  return read_region(
      index, [](int64_t height, int64_t width) { return CropBox{0, 0, height, width}; }, pixels);
}

int32_t RecordIODataset::read_region(int64_t index, const ChooseBox& choose, uint8_t* pixels) const {
  const int64_t at = offset(index);
  const std::string where = reader_.where(at);
  std::vector<uint8_t> payload;
  reader_.read_record(at, &payload);
  const ImageRecord record = parse_image_record(payload, where);
  const int32_t label = class_label(record, where);
  resize_chosen_box(decode_image(record.image, record.image_size, where), choose, height_, width_, where, pixels);
  return label;
}

}  // namespace dt::data
