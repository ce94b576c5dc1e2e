#include "data/image_record.h"

#include <cmath>
#include <cstdio>
#include <cstring>

#include "core/error.h"

namespace dt::data {

namespace {

using core::Error;
using core::ErrorCode;

uint32_t u32(const uint8_t* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

uint64_t u64(const uint8_t* p) { return uint64_t{u32(p)} | uint64_t{u32(p + 4)} << 32; }

float f32(const uint8_t* p) {
  const uint32_t bits = u32(p);
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

std::string format_float(float value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", static_cast<double>(value));
  return text;
}

}  // namespace

ImageRecord parse_image_record(const std::vector<uint8_t>& payload, const std::string& where) {
  if (payload.size() < ImageRecord::kHeaderBytes) {
    throw Error(ErrorCode::kIo, where + ": its " + std::to_string(payload.size()) +
                                    " bytes are shorter than the 24-byte image record header");
  }
  const uint8_t* p = payload.data();
  ImageRecord record;
  record.flag = u32(p);
  record.id = u64(p + 8);
  record.id2 = u64(p + 16);
  size_t used = ImageRecord::kHeaderBytes;
  if (record.flag == 0) {
    record.labels.push_back(f32(p + 4));
  } else {
    // In 64 bits: flag * 4 cannot overflow, and the comparison holds for any
    // flag a corrupt header claims.
    const uint64_t label_bytes = uint64_t{record.flag} * 4;
    if (label_bytes > payload.size() - used) {
      throw Error(ErrorCode::kIo, where + ": its header claims " + std::to_string(record.flag) + " labels (" +
                                      std::to_string(label_bytes) + " bytes), the record holds " +
                                      std::to_string(payload.size() - used) + " after the header");
    }
    record.labels.reserve(record.flag);
    for (uint32_t i = 0; i < record.flag; ++i) record.labels.push_back(f32(p + used + size_t{i} * 4));
    used += static_cast<size_t>(label_bytes);
  }
  record.image = p + used;
  record.image_size = payload.size() - used;
  return record;
}

int32_t class_label(const ImageRecord& record, const std::string& where) {
  const float label = record.labels.front();
  // 2147483520 is the largest float below 2^31.
  if (!(label >= 0.0f && label <= 2147483520.0f) || std::floor(label) != label) {
    throw Error(ErrorCode::kIo, where + ": its label " + format_float(label) +
                                    " is not a class (a whole number from 0 to 2^31 - 1)");
  }
  return static_cast<int32_t>(label);
}

}  // namespace dt::data
