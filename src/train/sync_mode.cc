#include "train/sync_mode.h"

#include "core/error.h"
#include "ps/compression/compression_mode.h"

namespace dt::train {

using core::Error;
using core::ErrorCode;
using ps::compression::CompressionConfig;
using ps::compression::CompressionMode;

const char* sync_mode_name(SyncMode mode) {
  switch (mode) {
    case SyncMode::kFull:
      return "full";
    case SyncMode::kHalf:
      return "half";
    case SyncMode::kPartial:
      return "partial";
    case SyncMode::kSparse:
      return "sparse";
  }
  return "unknown";
}

void SyncOptions::validate() const {
  switch (mode) {
    case SyncMode::kFull:
    case SyncMode::kHalf:
      return;
    case SyncMode::kPartial:
      if (partial_chunk_elements == 0) {
        throw Error(ErrorCode::kInvalidArgument, "sync mode partial: partial_chunk_elements must be positive");
      }
      return;
    case SyncMode::kSparse:
      if (sparse_topk ? !(sparse_value > 0.0 && sparse_value <= 1.0) : !(sparse_value > 0.0)) {
        throw Error(ErrorCode::kInvalidArgument,
                    "sync mode sparse: sparse_value " + std::to_string(sparse_value) + " must be " +
                        (sparse_topk ? "a fraction in (0, 1] (top-K)" : "a positive threshold"));
      }
      // The codec's own limits (e.g. a threshold that float cannot hold).
      compression_spec();
      return;
  }
  throw Error(ErrorCode::kInvalidArgument,
              "sync mode " + std::to_string(static_cast<int>(mode)) + " is none of full (0), half (1), "
              "partial (2) and sparse (3)");
}

std::string SyncOptions::compression_spec() const {
  CompressionConfig config;
  switch (mode) {
    case SyncMode::kHalf:
      config.mode = CompressionMode::kFp16;
      break;
    case SyncMode::kSparse:
      config.mode = sparse_topk ? CompressionMode::kTopK : CompressionMode::kThreshold;
      config.threshold_or_fraction = sparse_value;
      config.error_feedback = sparse_accumulate;
      break;
    default:
      break;
  }
  try {
    config.validate();
  } catch (const Error& e) {
    throw Error(ErrorCode::kInvalidArgument, std::string("sync mode ") + sync_mode_name(mode) + ": " + e.what());
  }
  return config.to_string();
}

}  // namespace dt::train
