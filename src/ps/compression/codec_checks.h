// What every gradient codec (gradient_codec.cc, sparse_pairs.cc) shares:
// float bits and little-endian words read and written with memcpy (the wire
// may be unaligned), the finiteness checks that keep NaN and Inf off the
// wire, and the errors of a malformed encoding. Internal to the codecs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "core/error.h"

namespace dt::ps::compression::codec_detail {

using core::Error;
using core::ErrorCode;

inline uint32_t bits_of(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

// 1 when value is NaN or +-Inf: its exponent is all ones, so adding one unit
// of exponent to the magnitude carries into the sign bit. Integer-only, so
// the loops that OR it up vectorise.
inline uint32_t non_finite(float value) { return ((bits_of(value) & 0x7fffffffu) + 0x00800000u) >> 31; }

inline void store_u32(uint8_t* out, uint32_t value) { std::memcpy(out, &value, sizeof value); }
inline uint32_t load_u32(const uint8_t* in) {
  uint32_t value;
  std::memcpy(&value, in, sizeof value);
  return value;
}

[[noreturn]] inline void throw_non_finite(const float* gradient, size_t n, const char* mode) {
  for (size_t i = 0; i < n; ++i) {
    if (non_finite(gradient[i])) {
      throw Error(ErrorCode::kInvalidArgument, std::string("gradient compression (") + mode + "): element " +
                                                   std::to_string(i) + " is " + std::to_string(gradient[i]) +
                                                   ", not a finite number");
    }
  }
  throw Error(ErrorCode::kInternal, "gradient compression: a non-finite element was reported but not found");
}

inline void check_finite(const float* gradient, size_t n, const char* mode) {
  uint32_t bad = 0;
  for (size_t i = 0; i < n; ++i) bad |= non_finite(gradient[i]);
  if (bad) throw_non_finite(gradient, n, mode);
}

inline Error malformed(const char* mode, const std::string& what) {
  return Error(ErrorCode::kProtocol, std::string("malformed ") + mode + " gradient: " + what);
}

inline void check_size(const char* mode, size_t size, size_t expected, size_t n) {
  if (size != expected) {
    throw malformed(mode, std::to_string(size) + " bytes for " + std::to_string(n) + " elements, expected " +
                              std::to_string(expected));
  }
}

inline size_t words_for(size_t n, size_t per_word) { return (n + per_word - 1) / per_word; }

}  // namespace dt::ps::compression::codec_detail
