// Encodes a float32 gradient into the bytes a worker sends under one
// CompressionConfig, and decodes such bytes back into float32 on the receiver.
// Pure functions of (config, input): no state between calls, so one codec may
// serve many threads at once.
//
// Wire formats (all multi-byte fields little-endian; n = element count, which
// both sides know from the key's size and is not sent; "threshold" is the
// config's raw_threshold(), threshold / gradient_scale, which both sides
// know from the config):
//  none:      n float32.                                              4n bytes
//  fp16:      n IEEE binary16, round to nearest even.                 2n bytes
//  bf16:      n bfloat16, round to nearest even.                      2n bytes
//  2bit:      MXNet's layout: ceil(n/16) 32-bit words, 16 values each;
//             byte b of the stream holds values 4b..4b+3, value 4b+j in
//             bits (7-2j, 6-2j) counting bit 0 as the least significant:
//             0b11 = +m (g >= t), 0b10 = -m (g <= -t), 0b00 = 0; 0b01
//             never appears, nor does any non-zero bit past value n-1.
//             magnitude=threshold (MXNet's): m = t, the words alone.
//                                                               4*ceil(n/16) bytes
//             magnitude=mean (the default): a float32 m first, the mean
//             |g| of the elements with |g| >= t (t when none), rounded
//             from a double mean so that m >= t; then the words. A
//             receiver refuses an m that is not finite or below t.
//                                                           4 + 4*ceil(n/16) bytes
//             (n = 0 is 0 bytes in both forms)
//  1bit:      ceil(n/32) 32-bit words, 32 values each; byte b holds values
//             8b..8b+7, value 8b+j in bit 7-j: 1 = +threshold (g > 0),
//             0 = -threshold (g <= 0, so +0, -0 and 0 < g all go to
//             -threshold: MXNet 1.9's 1bit also maps 0 to its negative
//             value). MXNet compares with the threshold and sends +-1; here
//             the sign decides and the threshold is the magnitude, so the
//             decoded scale follows the gradient's (with error feedback the
//             residual carries the rest either way). No bit past value n-1
//             is set.                                           4*ceil(n/32) bytes
//  topk:      k = max(1, ceil(fraction * n)) (0 when n == 0; fraction*n in
//             double) pairs (uint32 index, float32 value), the k largest |g|,
//             ties going to the lower index, in ascending index order.  8k bytes
//  threshold: every g with |g| >= threshold as (uint32 index, float32 value)
//             pairs, ascending index.                           8 * count bytes
//
// Encoding: NaN or Inf anywhere in the input, or a finite value that fp16
// cannot hold (|g| rounds past 65504; bf16 likewise near FLT_MAX), is
// Error(kInvalidArgument) naming the first such index: it is never encoded,
// since one Inf on the wire would poison every worker's sum. n above
// UINT32_MAX is Error(kInvalidArgument) for topk/threshold (their indices are
// 32-bit); the store splits keys into parts far smaller.
//
// Decoding ADDS into the destination (dst[i] += decoded[i]): the server sums
// the pushes of a round in rank order into one merge buffer, so adding saves
// it a scratch tensor and a second pass per worker, and the sparse formats
// are scatter-adds by nature; a caller who wants the values alone zeroes dst
// first. Bytes come from the network, so decoding checks everything before
// touching dst: a wrong length, a 0b01 code or padding bits set (2bit/1bit),
// a non-finite value, a 2bit magnitude below the threshold, an index out of
// range or not strictly ascending, a threshold pair below the threshold is
// Error(kProtocol) and dst is left unchanged.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ps/compression/compression_mode.h"

namespace dt::ps::compression {

class GradientCodec {
 public:
  // Validates config (Error(kInvalidArgument) as CompressionConfig::validate).
  explicit GradientCodec(const CompressionConfig& config);

  const CompressionConfig& config() const { return config_; }

  // Bytes encode() writes for n elements: exact for every mode but
  // threshold, whose count depends on the values (8n bounds it), so a caller
  // can size a message once before encoding into it.
  size_t max_encoded_size(size_t n) const;
  // The element count topk sends for n elements.
  static size_t topk_count(double fraction, size_t n);

  // Encodes gradient[0, n) into out, which has room for capacity bytes
  // (Error(kInvalidArgument) when capacity < max_encoded_size(n)), and
  // returns the bytes written. On error out's contents are unspecified.
  size_t encode(const float* gradient, size_t n, uint8_t* out, size_t capacity) const;

  // dst[0, n) += the values that bytes[0, size) encode (see above).
  void decode_add(const uint8_t* bytes, size_t size, float* dst, size_t n) const;

 private:
  CompressionConfig config_;
  float threshold_ = 0;  // static_cast<float>(config_.raw_threshold()) when the mode takes one
};

}  // namespace dt::ps::compression
