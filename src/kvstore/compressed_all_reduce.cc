#include "kvstore/compressed_all_reduce.h"

#include <algorithm>
#include <utility>

#include "core/error.h"

namespace dt::kvstore {

using core::Error;
using core::ErrorCode;

CompressedAllReduce::CompressedAllReduce(std::string store, const ps::compression::CompressionConfig& config)
    : store_(std::move(store)), codec_(config) {}

void CompressedAllReduce::run(float* data, size_t n, uint64_t tag, const AllGatherBytes& all_gather) {
  compensated_.assign(data, data + n);
  ps::compression::encode_with_feedback(codec_, codec_.config().error_feedback ? &feedback_ : nullptr, tag, 0,
                                        compensated_.data(), n, encoded_);
  const std::vector<std::vector<uint8_t>> all = all_gather(encoded_.data(), encoded_.size());
  // Every worker adds the same encodings in the same (rank) order.
  std::fill(data, data + n, 0.0f);
  for (size_t r = 0; r < all.size(); ++r) {
    try {
      codec_.decode_add(all[r].data(), all[r].size(), data, n);
    } catch (const Error& e) {
      throw Error(ErrorCode::kProtocol,
                  store_ + ": worker " + std::to_string(r) + "'s compressed gradient does not decode: " + e.what());
    }
  }
}

}  // namespace dt::kvstore
