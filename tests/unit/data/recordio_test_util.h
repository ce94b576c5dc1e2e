#pragma once

// RecordIO bytes written here by the format's documented layout (dmlc-core's
// RecordIOWriter, MXNet's image record header), independent of the reader
// under test.

#include <cstdint>
#include <cstring>
#include <vector>

#include "data_test_util.h"

namespace dt::data::testing {

constexpr uint32_t kRecordIOMagic = 0xced7230a;

inline void put_u32(Bytes& out, uint32_t v) {
  for (int shift = 0; shift < 32; shift += 8) out.push_back(static_cast<unsigned char>(v >> shift));
}

inline void put_f32(Bytes& out, float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  put_u32(out, bits);
}

// One part: magic, lrecord (cflag << 29 | length), payload, zero padding.
inline Bytes recordio_part(uint32_t cflag, const Bytes& payload) {
  Bytes out;
  put_u32(out, kRecordIOMagic);
  put_u32(out, cflag << 29 | static_cast<uint32_t>(payload.size()));
  out.insert(out.end(), payload.begin(), payload.end());
  out.resize(out.size() + (4 - payload.size() % 4) % 4, 0);
  return out;
}

// A whole record as dmlc-core's writer frames it: cut at every magic that
// starts at a 4-byte-aligned position of the payload, which is dropped.
inline Bytes recordio_record(const Bytes& payload, int* parts = nullptr) {
  Bytes magic;
  put_u32(magic, kRecordIOMagic);
  Bytes out;
  size_t start = 0;
  int count = 0;
  for (size_t i = 0; i + 4 <= payload.size() / 4 * 4; i += 4) {
    if (std::memcmp(&payload[i], magic.data(), 4) != 0) continue;
    const Bytes piece(payload.begin() + static_cast<std::ptrdiff_t>(start),
                      payload.begin() + static_cast<std::ptrdiff_t>(i));
    const Bytes part = recordio_part(start == 0 ? 1 : 2, piece);
    out.insert(out.end(), part.begin(), part.end());
    start = i + 4;
    ++count;
  }
  const Bytes tail(payload.begin() + static_cast<std::ptrdiff_t>(start), payload.end());
  const Bytes last = recordio_part(start == 0 ? 0 : 3, tail);
  out.insert(out.end(), last.begin(), last.end());
  if (parts != nullptr) *parts = count + 1;
  return out;
}

// MXNet's pack(): one label in the header, or flag = labels.size() labels
// after it; then the image bytes.
inline Bytes image_record_bytes(const std::vector<float>& labels, uint64_t id, const Bytes& image) {
  Bytes out;
  const bool vector = labels.size() != 1;
  put_u32(out, vector ? static_cast<uint32_t>(labels.size()) : 0);
  put_f32(out, vector ? 0.0f : labels[0]);
  put_u32(out, static_cast<uint32_t>(id));
  put_u32(out, static_cast<uint32_t>(id >> 32));
  put_u32(out, 0);
  put_u32(out, 0);
  if (vector) {
    for (float label : labels) put_f32(out, label);
  }
  out.insert(out.end(), image.begin(), image.end());
  return out;
}

inline Bytes concat(const std::vector<Bytes>& pieces) {
  Bytes out;
  for (const Bytes& piece : pieces) out.insert(out.end(), piece.begin(), piece.end());
  return out;
}

}  // namespace dt::data::testing
