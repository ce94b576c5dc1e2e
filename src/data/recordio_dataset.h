// An MXNet RecordIO image set, what ImageRecordIter reads: a .rec file of
// image records (image_record.h) in RecordIO framing (recordio_reader.h),
// with or without the .idx that im2rec writes beside it. With the index the
// samples are its lines in order, found by their offsets; without it the
// .rec is walked once, here, to find where its records start. The images
// (JPEG or PNG) are read and decoded when a sample is read, on the loader's
// threads, so memory holds the offsets and the batches in flight, never the
// data set; each is converted to RGB and resized (bilinear) to the H x W
// given here, as an image folder's are, so that batches are (B, 3, H, W).
// The label is the record's first label as a class index.
//
// Sharding (num_parts / part_index) and shuffling within a part are the
// split sampler's and the batch loader's, as for every dataset. Thread
// safety: the const members may run concurrently (reads are pread calls).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "data/image_record.h"
#include "data/recordio_reader.h"

namespace dt::data {

class RecordIODataset final : public Dataset {
 public:
  static constexpr int64_t kChannels = 3;
  static constexpr int64_t kMaxSide = 65500;

  // Opens rec_path and reads idx_path (empty: no index, walk the .rec).
  // Error(kInvalidArgument) for a height or width outside [1, kMaxSide];
  // Error(kNotFound) for a missing file; Error(kIo) naming the file and byte
  // offset for a malformed index or (walking) a malformed record, and for a
  // file without records.
  RecordIODataset(const std::string& rec_path, const std::string& idx_path, int64_t height, int64_t width);

  // The index im2rec would have written beside rec_path (x.rec -> x.idx) when
  // that file exists, else "".
  static std::string sibling_index(const std::string& rec_path);

  int64_t size() const override { return static_cast<int64_t>(offsets_.size()); }
  core::Shape sample_shape() const override { return {kChannels, height_, width_}; }
  // Reads, parses and decodes the record, and resizes the whole image. A
  // malformed record, header, label or image is Error(kIo) naming the file
  // and the record's byte offset, thrown from here, so from the loader's next().
  int32_t read_sample(int64_t index, uint8_t* pixels) const override;
  bool has_source_images() const override { return true; }
  int32_t read_region(int64_t index, const ChooseBox& choose, uint8_t* pixels) const override;

  const std::string& path() const { return reader_.path(); }
  // Where sample index's record starts in the .rec.
  int64_t offset(int64_t index) const;
  // Sample index's record: its header fields and labels (the image view is
  // cleared, since the payload it pointed into is gone).
  ImageRecord header(int64_t index) const;

 private:
  RecordIOReader reader_;
  int64_t height_;
  int64_t width_;
  std::vector<int64_t> offsets_;
};

}  // namespace dt::data
