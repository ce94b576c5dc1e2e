#include "ps/compression/error_feedback.h"

#include <algorithm>
#include <string>

#include "core/error.h"

namespace dt::ps::compression {

using core::Error;
using core::ErrorCode;

std::vector<float>& ErrorFeedback::part(uint64_t key, int64_t begin, size_t n) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto& slot = parts_[{key, begin}];
  if (!slot) slot = std::make_unique<std::vector<float>>(n, 0.0f);
  if (slot->size() != n) {
    throw Error(ErrorCode::kShapeMismatch, "error feedback: key " + std::to_string(key) + " part at " +
                                               std::to_string(begin) + " has " + std::to_string(slot->size()) +
                                               " elements, now " + std::to_string(n));
  }
  return *slot;
}

void ErrorFeedback::compensate(uint64_t key, int64_t begin, float* values, size_t n) {
  const float* residual = part(key, begin, n).data();
  for (size_t i = 0; i < n; ++i) values[i] += residual[i];
}

void ErrorFeedback::update(uint64_t key, int64_t begin, const float* compensated, size_t n,
                           const GradientCodec& codec, const uint8_t* encoded, size_t size) {
  std::vector<float>& residual = part(key, begin, n);
  // Decode into -compensated and negate: -((-c) + d) is bit for bit c - d
  // (rounding to nearest is symmetric), without a scratch tensor.
  for (size_t i = 0; i < n; ++i) residual[i] = -compensated[i];
  try {
    codec.decode_add(encoded, size, residual.data(), n);
  } catch (...) {
    std::fill(residual.begin(), residual.end(), 0.0f);
    throw;
  }
  for (size_t i = 0; i < n; ++i) residual[i] = -residual[i];
}

void ErrorFeedback::reset(uint64_t key, int64_t begin, size_t n) {
  std::vector<float>& residual = part(key, begin, n);
  std::fill(residual.begin(), residual.end(), 0.0f);
}

void ErrorFeedback::restore(uint64_t key, int64_t begin, const float* values, size_t n) {
  std::vector<float>& residual = part(key, begin, n);
  std::copy(values, values + n, residual.begin());
}

const std::vector<float>* ErrorFeedback::residual(uint64_t key, int64_t begin) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = parts_.find({key, begin});
  return it == parts_.end() ? nullptr : it->second.get();
}

size_t ErrorFeedback::num_parts() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return parts_.size();
}

void ErrorFeedback::clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  parts_.clear();
}

void encode_with_feedback(const GradientCodec& codec, ErrorFeedback* feedback, uint64_t key, int64_t begin,
                          float* values, size_t n, std::vector<uint8_t>& out) {
  if (feedback) feedback->compensate(key, begin, values, n);
  out.resize(codec.max_encoded_size(n));
  out.resize(codec.encode(values, n, out.data(), out.size()));
  if (feedback) feedback->update(key, begin, values, n, codec, out.data(), out.size());
}

}  // namespace dt::ps::compression
