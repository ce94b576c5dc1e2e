#include "ps/compression/gradient_codec.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "core/dtype.h"
#include "core/error.h"
#include "ps/compression/codec_checks.h"
#include "ps/compression/sparse_pairs.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

// The wire is little-endian and the codecs copy words and floats to and from
// it with memcpy; a big-endian port would byte-swap in load_u32/store_u32.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the gradient codecs assume a little-endian host");

namespace dt::ps::compression {

using core::Error;
using core::ErrorCode;
using namespace codec_detail;

namespace {

// --- 2bit ------------------------------------------------------------------

// The 2-bit code of one value: 0b11 for >= t, 0b10 for <= -t, 0b00 otherwise
// (NaN included; the caller rejects it). Branch-free.
uint32_t code_2bit(float value, float t) {
  const uint32_t pos = value >= t;
  const uint32_t neg = value <= -t;
  return ((pos | neg) << 1) | pos;
}

// Value i (0..15) of a word sits at bit 8*(i/4) + 6 - 2*(i%4) of the
// little-endian word: byte i/4, most significant pair first.
constexpr uint32_t shift_2bit(size_t i) { return static_cast<uint32_t>(8 * (i / 4) + 6 - 2 * (i % 4)); }

uint32_t encode_2bit_word(const float* values, size_t count, float t, uint32_t& bad) {
  uint32_t word = 0;
  for (size_t i = 0; i < count; ++i) {
    word |= code_2bit(values[i], t) << shift_2bit(i);
    bad |= non_finite(values[i]);
  }
  return word;
}

#if defined(__SSE2__)
// kSpread2[m]: bit j of the 4-bit mask m moved to bit 6-2j.
constexpr uint8_t spread_2bit(unsigned m) {
  return static_cast<uint8_t>(((m & 1u) << 6) | ((m & 2u) << 3) | ((m & 4u) >> 0) | ((m & 8u) >> 3));
}
constexpr uint8_t kSpread2[16] = {spread_2bit(0),  spread_2bit(1),  spread_2bit(2),  spread_2bit(3),
                                  spread_2bit(4),  spread_2bit(5),  spread_2bit(6),  spread_2bit(7),
                                  spread_2bit(8),  spread_2bit(9),  spread_2bit(10), spread_2bit(11),
                                  spread_2bit(12), spread_2bit(13), spread_2bit(14), spread_2bit(15)};
static_assert(spread_2bit(1) == 0x40 && spread_2bit(2) == 0x10 && spread_2bit(4) == 0x04 && spread_2bit(8) == 0x01);

// Four values per compare: movemask gives their >= t and <= -t bits, a
// 16-entry table spreads each nibble into its byte's pairs.
size_t encode_2bit_full_words(const float* g, size_t words, float t, uint8_t* out, uint32_t& bad_out) {
  const __m128 pos_t = _mm_set1_ps(t);
  const __m128 neg_t = _mm_set1_ps(-t);
  const __m128i abs_mask = _mm_set1_epi32(0x7fffffff);
  const __m128i max_finite = _mm_set1_epi32(0x7f7fffff);
  __m128i bad = _mm_setzero_si128();
  for (size_t w = 0; w < words; ++w) {
    uint32_t word = 0;
    for (int q = 0; q < 4; ++q) {
      const __m128 v = _mm_loadu_ps(g + 16 * w + 4 * q);
      const unsigned pos = static_cast<unsigned>(_mm_movemask_ps(_mm_cmpge_ps(v, pos_t)));
      const unsigned neg = static_cast<unsigned>(_mm_movemask_ps(_mm_cmple_ps(v, neg_t)));
      bad = _mm_or_si128(bad, _mm_cmpgt_epi32(_mm_and_si128(_mm_castps_si128(v), abs_mask), max_finite));
      word |= static_cast<uint32_t>((kSpread2[pos | neg] << 1) | kSpread2[pos]) << (8 * q);
    }
    store_u32(out + 4 * w, word);
  }
  bad_out |= static_cast<uint32_t>(_mm_movemask_epi8(bad) != 0);
  return words * 16;
}
#else
size_t encode_2bit_full_words(const float* g, size_t words, float t, uint8_t* out, uint32_t& bad) {
  for (size_t w = 0; w < words; ++w) store_u32(out + 4 * w, encode_2bit_word(g + 16 * w, 16, t, bad));
  return words * 16;
}
#endif

size_t encode_2bit(const float* g, size_t n, float t, uint8_t* out) {
  uint32_t bad = 0;
  const size_t full = n / 16;
  encode_2bit_full_words(g, full, t, out, bad);
  if (n % 16 != 0) store_u32(out + 4 * full, encode_2bit_word(g + 16 * full, n % 16, t, bad));
  if (bad) throw_non_finite(g, n, "2bit");
  return 4 * words_for(n, 16);
}

// The mean |g| of the elements 2bit sends (|g| >= t), or t when none
// crosses: rounded from a double mean of floats that are all >= t, so never
// below t. Branch-free, so it vectorises.
float mean_crossing_magnitude(const float* g, size_t n, float t) {
  double sum = 0;
  size_t count = 0;
  for (size_t i = 0; i < n; ++i) {
    const float magnitude = std::fabs(g[i]);
    const bool crosses = magnitude >= t;
    sum += crosses ? magnitude : 0.0f;
    count += crosses;
  }
  return count == 0 ? t : static_cast<float>(sum / static_cast<double>(count));
}

// 2bit's magnitude=mean form: the float32 magnitude, then the codes.
size_t encode_2bit_mean(const float* g, size_t n, float t, uint8_t* out) {
  const size_t code_bytes = encode_2bit(g, n, t, out + 4);  // rejects NaN and Inf first
  const float magnitude = mean_crossing_magnitude(g, n, t);
  std::memcpy(out, &magnitude, 4);
  return 4 + code_bytes;
}

// --- 1bit ------------------------------------------------------------------

// Value i (0..31) of a word sits at bit 8*(i/8) + 7 - i%8: byte i/8, most
// significant bit first.
constexpr uint32_t shift_1bit(size_t i) { return static_cast<uint32_t>(8 * (i / 8) + 7 - i % 8); }

uint32_t encode_1bit_word(const float* values, size_t count, uint32_t& bad) {
  uint32_t word = 0;
  for (size_t i = 0; i < count; ++i) {
    word |= static_cast<uint32_t>(values[i] > 0.0f) << shift_1bit(i);
    bad |= non_finite(values[i]);
  }
  return word;
}

#if defined(__SSE2__)
// kReverse4[m]: the 4-bit mask m with bit j moved to bit 3-j.
constexpr uint8_t reverse_4(unsigned m) {
  return static_cast<uint8_t>(((m & 1u) << 3) | ((m & 2u) << 1) | ((m & 4u) >> 1) | ((m & 8u) >> 3));
}
constexpr uint8_t kReverse4[16] = {reverse_4(0),  reverse_4(1),  reverse_4(2),  reverse_4(3),
                                   reverse_4(4),  reverse_4(5),  reverse_4(6),  reverse_4(7),
                                   reverse_4(8),  reverse_4(9),  reverse_4(10), reverse_4(11),
                                   reverse_4(12), reverse_4(13), reverse_4(14), reverse_4(15)};

void encode_1bit_full_words(const float* g, size_t words, uint8_t* out, uint32_t& bad_out) {
  const __m128 zero = _mm_setzero_ps();
  const __m128i abs_mask = _mm_set1_epi32(0x7fffffff);
  const __m128i max_finite = _mm_set1_epi32(0x7f7fffff);
  __m128i bad = _mm_setzero_si128();
  for (size_t w = 0; w < words; ++w) {
    uint32_t word = 0;
    for (int q = 0; q < 8; ++q) {
      const __m128 v = _mm_loadu_ps(g + 32 * w + 4 * q);
      const unsigned pos = static_cast<unsigned>(_mm_movemask_ps(_mm_cmpgt_ps(v, zero)));
      bad = _mm_or_si128(bad, _mm_cmpgt_epi32(_mm_and_si128(_mm_castps_si128(v), abs_mask), max_finite));
      // Even q: values 0..3 of byte q/2, its high nibble; odd q: the low one.
      word |= static_cast<uint32_t>(kReverse4[pos]) << (8 * (q / 2) + ((q % 2) ? 0 : 4));
    }
    store_u32(out + 4 * w, word);
  }
  bad_out |= static_cast<uint32_t>(_mm_movemask_epi8(bad) != 0);
}
#else
void encode_1bit_full_words(const float* g, size_t words, uint8_t* out, uint32_t& bad) {
  for (size_t w = 0; w < words; ++w) store_u32(out + 4 * w, encode_1bit_word(g + 32 * w, 32, bad));
}
#endif

size_t encode_1bit(const float* g, size_t n, uint8_t* out) {
  uint32_t bad = 0;
  const size_t full = n / 32;
  encode_1bit_full_words(g, full, out, bad);
  if (n % 32 != 0) store_u32(out + 4 * full, encode_1bit_word(g + 32 * full, n % 32, bad));
  if (bad) throw_non_finite(g, n, "1bit");
  return 4 * words_for(n, 32);
}

// --- fp16 / bf16 ------------------------------------------------------------

template <uint16_t (*Convert)(float), uint16_t kExponent>
size_t encode_half(const float* g, size_t n, uint8_t* out, const char* mode) {
  uint32_t bad = 0;
  for (size_t i = 0; i < n; ++i) {
    const uint16_t h = Convert(g[i]);
    bad |= static_cast<uint32_t>((h & kExponent) == kExponent);
    std::memcpy(out + 2 * i, &h, 2);
  }
  if (bad) {
    check_finite(g, n, mode);  // names a non-finite input first
    for (size_t i = 0; i < n; ++i) {
      if ((Convert(g[i]) & kExponent) == kExponent) {
        throw Error(ErrorCode::kInvalidArgument, std::string("gradient compression (") + mode + "): element " +
                                                     std::to_string(i) + " is " + std::to_string(g[i]) +
                                                     ", beyond the largest finite " + mode);
      }
    }
  }
  return 2 * n;
}

template <float (*Convert)(uint16_t), uint16_t kExponent>
void decode_half_add(const uint8_t* bytes, size_t size, float* dst, size_t n, const char* mode) {
  check_size(mode, size, 2 * n, n);
  uint32_t bad = 0;
  for (size_t i = 0; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, bytes + 2 * i, 2);
    bad |= static_cast<uint32_t>((h & kExponent) == kExponent);
  }
  if (bad) throw malformed(mode, "a value is NaN or infinite");
  for (size_t i = 0; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, bytes + 2 * i, 2);
    dst[i] += Convert(h);
  }
}

}  // namespace

GradientCodec::GradientCodec(const CompressionConfig& config) : config_(config) {
  config_.validate();
  if (takes_threshold(config_.mode)) threshold_ = static_cast<float>(config_.raw_threshold());
}

size_t GradientCodec::topk_count(double fraction, size_t n) {
  if (n == 0) return 0;
  const double wanted = std::ceil(fraction * static_cast<double>(n));
  return std::clamp<size_t>(wanted >= static_cast<double>(n) ? n : static_cast<size_t>(wanted), 1, n);
}

size_t GradientCodec::max_encoded_size(size_t n) const {
  switch (config_.mode) {
    case CompressionMode::kNone: return 4 * n;
    case CompressionMode::kFp16:
    case CompressionMode::kBf16: return 2 * n;
    case CompressionMode::k2Bit:
      return n == 0 ? 0 : (config_.magnitude == Magnitude::kMean ? 4 : 0) + 4 * words_for(n, 16);
    case CompressionMode::k1Bit: return 4 * words_for(n, 32);
    case CompressionMode::kTopK: return kPairBytes * topk_count(config_.threshold_or_fraction, n);
    case CompressionMode::kThreshold: return kPairBytes * n;
  }
  throw Error(ErrorCode::kInternal, "gradient compression: unknown mode");
}

size_t GradientCodec::encode(const float* gradient, size_t n, uint8_t* out, size_t capacity) const {
  if (capacity < max_encoded_size(n)) {
    throw Error(ErrorCode::kInvalidArgument, std::string("gradient compression (") + mode_name(config_.mode) +
                                                 "): " + std::to_string(capacity) + " bytes of room for " +
                                                 std::to_string(n) + " elements, which need up to " +
                                                 std::to_string(max_encoded_size(n)));
  }
  if (n == 0) return 0;
  switch (config_.mode) {
    case CompressionMode::kNone:
      check_finite(gradient, n, "none");
      std::memcpy(out, gradient, 4 * n);
      return 4 * n;
    case CompressionMode::kFp16: return encode_half<core::float_to_half, 0x7c00>(gradient, n, out, "fp16");
    case CompressionMode::kBf16: return encode_half<core::float_to_bfloat16, 0x7f80>(gradient, n, out, "bf16");
    case CompressionMode::k2Bit:
      return config_.magnitude == Magnitude::kMean ? encode_2bit_mean(gradient, n, threshold_, out)
                                                   : encode_2bit(gradient, n, threshold_, out);
    case CompressionMode::k1Bit: return encode_1bit(gradient, n, out);
    case CompressionMode::kTopK: return encode_topk(gradient, n, config_.threshold_or_fraction, out);
    case CompressionMode::kThreshold: return encode_threshold(gradient, n, threshold_, out);
  }
  throw Error(ErrorCode::kInternal, "gradient compression: unknown mode");
}

void GradientCodec::decode_add(const uint8_t* bytes, size_t size, float* dst, size_t n) const {
  const char* mode = mode_name(config_.mode);
  switch (config_.mode) {
    case CompressionMode::kNone: {
      check_size(mode, size, 4 * n, n);
      uint32_t bad = 0;
      for (size_t i = 0; i < n; ++i) bad |= ((load_u32(bytes + 4 * i) & 0x7fffffffu) + 0x00800000u) >> 31;
      if (bad) throw malformed(mode, "a value is NaN or infinite");
      for (size_t i = 0; i < n; ++i) {
        float value;
        std::memcpy(&value, bytes + 4 * i, 4);
        dst[i] += value;
      }
      return;
    }
    case CompressionMode::kFp16: return decode_half_add<core::half_to_float, 0x7c00>(bytes, size, dst, n, mode);
    case CompressionMode::kBf16: return decode_half_add<core::bfloat16_to_float, 0x7f80>(bytes, size, dst, n, mode);
    case CompressionMode::k2Bit: {
      check_size(mode, size, max_encoded_size(n), n);
      if (n == 0) return;
      float magnitude = threshold_;
      if (config_.magnitude == Magnitude::kMean) {
        std::memcpy(&magnitude, bytes, 4);
        // The mean of values that crossed the threshold is never below it.
        if (non_finite(magnitude) || !(magnitude >= threshold_)) {
          throw malformed(mode, "magnitude " + std::to_string(magnitude) + " is not a finite number at or above the threshold " +
                                    std::to_string(threshold_));
        }
        bytes += 4;
        size -= 4;
      }
      uint32_t bad = 0;
      // A pair 0b01: low bit set, high bit clear.
      for (size_t b = 0; b < size; ++b) bad |= bytes[b] & ~(bytes[b] >> 1) & 0x55u;
      if (bad) throw malformed(mode, "a 2-bit code is 0b01");
      if (n % 16 != 0) {
        uint32_t mask = 0;
        for (size_t i = 0; i < n % 16; ++i) mask |= uint32_t{3} << shift_2bit(i);
        if (load_u32(bytes + size - 4) & ~mask) throw malformed(mode, "bits past the last element are set");
      }
      const float values[4] = {0.0f, 0.0f, -magnitude, magnitude};
      for (size_t i = 0; i < n; ++i) dst[i] += values[(bytes[i / 4] >> (6 - 2 * (i % 4))) & 3u];
      return;
    }
    case CompressionMode::k1Bit: {
      check_size(mode, size, 4 * words_for(n, 32), n);
      if (n % 32 != 0) {
        uint32_t mask = 0;
        for (size_t i = 0; i < n % 32; ++i) mask |= uint32_t{1} << shift_1bit(i);
        if (load_u32(bytes + size - 4) & ~mask) throw malformed(mode, "bits past the last element are set");
      }
      const float values[2] = {-threshold_, threshold_};
      for (size_t i = 0; i < n; ++i) dst[i] += values[(bytes[i / 8] >> (7 - i % 8)) & 1u];
      return;
    }
    case CompressionMode::kTopK: {
      const size_t k = topk_count(config_.threshold_or_fraction, n);
      check_size(mode, size, kPairBytes * k, n);
      return decode_pairs_add(bytes, k, dst, n, 0.0f, mode);
    }
    case CompressionMode::kThreshold: {
      if (size % kPairBytes != 0 || size / kPairBytes > n) {
        throw malformed(mode, std::to_string(size) + " bytes for " + std::to_string(n) +
                                  " elements: not a whole number of 8-byte pairs, at most one per element");
      }
      return decode_pairs_add(bytes, size / kPairBytes, dst, n, threshold_, mode);
    }
  }
  throw Error(ErrorCode::kInternal, "gradient compression: unknown mode");
}

}  // namespace dt::ps::compression
