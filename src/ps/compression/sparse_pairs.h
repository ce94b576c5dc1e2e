// The sparse formats of the gradient codecs (gradient_codec.h): (uint32
// index, float32 value) pairs in ascending index order, topk's k largest
// magnitudes and threshold's every value at or above the threshold. Internal
// to GradientCodec, which checks sizes and capacities before calling.
#pragma once

#include <cstddef>
#include <cstdint>

namespace dt::ps::compression::codec_detail {

constexpr size_t kPairBytes = 8;  // uint32 index + float32 value

// The k = GradientCodec::topk_count(fraction, n) largest |g| as pairs, ties
// to the lower index; returns the bytes written (8k).
size_t encode_topk(const float* g, size_t n, double fraction, uint8_t* out);
// Every g with |g| >= t as pairs; returns the bytes written.
size_t encode_threshold(const float* g, size_t n, float t, uint8_t* out);
// Checks every one of count pairs (index below n, strictly ascending,
// finite, |value| >= min_magnitude: 0 for topk) and then adds each value
// into dst[index]; Error(kProtocol) naming mode and dst unchanged otherwise.
void decode_pairs_add(const uint8_t* bytes, size_t count, float* dst, size_t n, float min_magnitude,
                      const char* mode);

}  // namespace dt::ps::compression::codec_detail
