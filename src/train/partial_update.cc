#include "train/partial_update.h"

#include <string>

#include "core/error.h"
#include "ops/tensor_math.h"

namespace dt::train {

using core::Error;
using core::ErrorCode;

PartialUpdate::PartialUpdate(const std::vector<size_t>& sizes, size_t chunk_elements) {
  if (chunk_elements == 0) throw Error(ErrorCode::kInvalidArgument, "partial update: chunk_elements must be positive");
  std::vector<size_t> open;
  size_t held = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] > chunk_elements) {
      chunks_.push_back({i});
      continue;
    }
    open.push_back(i);
    held += sizes[i];
    if (held > chunk_elements) {
      chunks_.push_back(std::move(open));
      open.clear();
      held = 0;
    }
  }
  if (!open.empty()) chunks_.push_back(std::move(open));
}

size_t PartialUpdate::chunk_of_step(int64_t step) const {
  if (step < 0) throw Error(ErrorCode::kInvalidArgument, "partial update: step " + std::to_string(step) + " < 0");
  if (chunks_.empty()) throw Error(ErrorCode::kBadState, "partial update: there are no parameters to average");
  return static_cast<size_t>(step % static_cast<int64_t>(chunks_.size()));
}

void PartialUpdate::average(kvstore::KVStore& kv, const std::vector<kvstore::Key>& keys,
                            const std::vector<core::NDArray>& weights, int64_t step) const {
  if (chunks_.empty()) return;
  const std::vector<size_t>& members = chunks_[chunk_of_step(step)];
  std::vector<kvstore::Key> chunk_keys;
  std::vector<core::NDArray> chunk_weights;
  for (size_t position : members) {
    if (position >= keys.size() || position >= weights.size()) {
      throw Error(ErrorCode::kInvalidArgument,
                  "partial update: " + std::to_string(keys.size()) + " keys and " + std::to_string(weights.size()) +
                      " weights for a chunk of position " + std::to_string(position));
    }
    chunk_keys.push_back(keys[position]);
    chunk_weights.push_back(weights[position]);
  }
  kv.pushpull(chunk_keys, chunk_weights, chunk_weights, 0);
  const int workers = kv.num_workers();
  if (workers > 1) {
    for (const core::NDArray& w : chunk_weights) ops::scale(w, 1.0 / static_cast<double>(workers));
  }
}

}  // namespace dt::train
