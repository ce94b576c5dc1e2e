// The two-call buffer protocol of the calls that hand out bytes of a length
// the caller cannot know (dt_*_to_json, dt_kvstore_handed_state): report
// the bytes needed, and copy only when the caller's buffer holds them.
#pragma once

#include <cstring>
#include <string>

#include "c_api/handles.h"

namespace dt::c_api {

inline void write_bytes_out(char* buf, size_t capacity, size_t* out_length, const void* bytes, size_t size) {
  arg(out_length, "out_length");
  if (buf != nullptr) {
    if (capacity < size) {
      throw core::Error(core::ErrorCode::kInvalidArgument, "buffer of " + std::to_string(capacity) +
                                                               " bytes is too small; " + std::to_string(size) +
                                                               " needed");
    }
    if (size > 0) std::memcpy(buf, bytes, size);
  } else if (capacity != 0) {
    throw core::Error(core::ErrorCode::kInvalidArgument, "buf is NULL but capacity is not 0");
  }
  *out_length = size;
}

// Text, with its NUL.
inline void write_string_out(char* buf, size_t capacity, size_t* out_length, const std::string& text) {
  write_bytes_out(buf, capacity, out_length, text.c_str(), text.size() + 1);
}

}  // namespace dt::c_api
