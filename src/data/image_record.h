// MXNet's image record, the payload of each RecordIO record that im2rec
// writes (mxnet.recordio.pack / pack_img, ImageRecordIO::Header):
//   uint32 flag, float32 label, uint64 id, uint64 id2   (24 bytes, little-endian)
//   flag > 0: `flag` float32 labels follow (a label vector; the header's
//             label field is then unused)
//   the encoded image (JPEG or PNG) fills the rest.
// Plain parsing of bytes in memory: no state, safe on any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace dt::data {

struct ImageRecord {
  static constexpr size_t kHeaderBytes = 24;

  uint32_t flag = 0;
  // One label when flag is 0 (the header's), else the flag labels that follow.
  std::vector<float> labels;
  uint64_t id = 0;
  uint64_t id2 = 0;
  // The encoded image, a view into the payload given to parse_image_record.
  const uint8_t* image = nullptr;
  size_t image_size = 0;
};

// Parses `payload`; `where` names it in messages ("train.rec, record at byte
// offset 96"). Error(kIo) when the payload is shorter than the header or
// than the header and its flag labels.
ImageRecord parse_image_record(const std::vector<uint8_t>& payload, const std::string& where);

// The class of a record: its first label (ImageRecordIter's label_width 1),
// which must be a whole number in [0, 2^31 - 1]; Error(kIo) naming `where`
// otherwise.
int32_t class_label(const ImageRecord& record, const std::string& where);

}  // namespace dt::data
