#include "ps/compression/sparse_pairs.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "ps/compression/codec_checks.h"
#include "ps/compression/gradient_codec.h"

namespace dt::ps::compression::codec_detail {

namespace {

void store_pair(uint8_t* out, uint32_t index, float value) {
  std::memcpy(out, &index, 4);
  std::memcpy(out + 4, &value, 4);
}

void check_index_range(size_t n, const char* mode) {
  if (n > std::numeric_limits<uint32_t>::max()) {
    throw Error(ErrorCode::kInvalidArgument, std::string("gradient compression (") + mode + "): " +
                                                 std::to_string(n) + " elements exceed the 32-bit indices");
  }
}

// The magnitude of a finite float as an integer that orders the same way.
uint32_t magnitude_bits(float value) { return bits_of(value) & 0x7fffffffu; }

// The k-th largest of the magnitude bits (1 <= k <= n), by a radix step on
// the top 11 bits (exponent and three mantissa bits; four sub-histograms so
// that runs of one bucket do not serialise on one counter) and a selection
// among that bucket's elements alone. Also returns how many magnitudes are
// strictly larger.
std::pair<uint32_t, size_t> kth_largest_magnitude(const float* g, size_t n, size_t k) {
  constexpr size_t kBuckets = size_t{1} << 11;
  constexpr int kShift = 20;  // magnitudes are below 2^31
  std::vector<uint32_t> histograms(4 * kBuckets, 0);
  uint32_t* h = histograms.data();
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    ++h[0 * kBuckets + (magnitude_bits(g[i]) >> kShift)];
    ++h[1 * kBuckets + (magnitude_bits(g[i + 1]) >> kShift)];
    ++h[2 * kBuckets + (magnitude_bits(g[i + 2]) >> kShift)];
    ++h[3 * kBuckets + (magnitude_bits(g[i + 3]) >> kShift)];
  }
  for (; i < n; ++i) ++h[magnitude_bits(g[i]) >> kShift];
  size_t above = 0;
  size_t bucket = kBuckets;
  size_t in_bucket = 0;
  while (bucket > 0) {
    --bucket;
    in_bucket = size_t{h[bucket]} + h[kBuckets + bucket] + h[2 * kBuckets + bucket] + h[3 * kBuckets + bucket];
    if (above + in_bucket >= k) break;
    above += in_bucket;
  }
  std::vector<uint32_t> candidates;
  candidates.reserve(in_bucket);
  for (i = 0; i < n; ++i) {
    const uint32_t m = magnitude_bits(g[i]);
    if ((m >> kShift) == bucket) candidates.push_back(m);
  }
  const size_t rank = k - above - 1;  // 0-based among the bucket's, largest first
  std::nth_element(candidates.begin(), candidates.begin() + static_cast<std::ptrdiff_t>(rank), candidates.end(),
                   std::greater<uint32_t>());
  const uint32_t kth = candidates[rank];
  for (uint32_t m : candidates) above += m > kth;
  return {kth, above};
}

}  // namespace

size_t encode_topk(const float* g, size_t n, double fraction, uint8_t* out) {
  check_index_range(n, "topk");
  check_finite(g, n, "topk");
  const size_t k = GradientCodec::topk_count(fraction, n);
  if (k == 0) return 0;
  // Every magnitude above the k-th largest goes, and of those equal to it
  // the lowest indices, so the choice is one total order's and never
  // depends on the selection algorithm.
  const auto [kth, above] = kth_largest_magnitude(g, n, k);
  size_t ties_left = k - above;
  size_t written = 0;
  for (size_t i = 0; i < n; ++i) {
    const uint32_t m = magnitude_bits(g[i]);
    if (m > kth || (m == kth && ties_left > 0)) {
      if (m == kth) --ties_left;
      store_pair(out + kPairBytes * written++, static_cast<uint32_t>(i), g[i]);
    }
  }
  return kPairBytes * written;
}

size_t encode_threshold(const float* g, size_t n, float t, uint8_t* out) {
  check_index_range(n, "threshold");
  check_finite(g, n, "threshold");
  size_t written = 0;
  for (size_t i = 0; i < n; ++i) {
    if (std::fabs(g[i]) >= t) store_pair(out + kPairBytes * written++, static_cast<uint32_t>(i), g[i]);
  }
  return kPairBytes * written;
}

// Checks every pair, then adds; min_magnitude is 0 for topk.
void decode_pairs_add(const uint8_t* bytes, size_t count, float* dst, size_t n, float min_magnitude,
                      const char* mode) {
  uint64_t previous = 0;
  for (size_t p = 0; p < count; ++p) {
    uint32_t index;
    float value;
    std::memcpy(&index, bytes + kPairBytes * p, 4);
    std::memcpy(&value, bytes + kPairBytes * p + 4, 4);
    if (index >= n) {
      throw malformed(mode, "pair " + std::to_string(p) + " has index " + std::to_string(index) + " for " +
                                std::to_string(n) + " elements");
    }
    if (p > 0 && index <= previous) {
      throw malformed(mode, "pair " + std::to_string(p) + " has index " + std::to_string(index) + " after " +
                                std::to_string(previous) + ": indices must be strictly ascending");
    }
    if (non_finite(value)) throw malformed(mode, "pair " + std::to_string(p) + " has a non-finite value");
    if (!(std::fabs(value) >= min_magnitude)) {
      throw malformed(mode, "pair " + std::to_string(p) + " has value " + std::to_string(value) +
                                " below the threshold");
    }
    previous = index;
  }
  for (size_t p = 0; p < count; ++p) {
    uint32_t index;
    float value;
    std::memcpy(&index, bytes + kPairBytes * p, 4);
    std::memcpy(&value, bytes + kPairBytes * p + 4, 4);
    dst[index] += value;
  }
}

}  // namespace dt::ps::compression::codec_detail
