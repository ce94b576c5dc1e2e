// How a trainer's step keeps the workers of a distributed job together:
// SINGA DistOpt's four steps, as a trainer option.
//  - kFull (backward_and_update; the default): the gradients are reduced in
//    full through the kvstore, as MXNet and Gluon do.
//  - kHalf (backward_and_update_half): the same, but every worker's gradients
//    travel as float16 (the store's "fp16" gradient compression, without
//    error feedback: SINGA casts, sends and casts back, keeping nothing).
//  - kPartial (backward_and_partial_update): every worker applies its own
//    gradients to its own weights, then one chunk of the parameters is
//    averaged across the workers, a different chunk each step
//    (train/partial_update.h).
//  - kSparse (backward_and_sparse_update): the gradients are reduced, but
//    each worker sends only its significant elements: those with
//    |g| >= sparse_value (SINGA's topK=False, the default), or the
//    sparse_value fraction of largest |g| (topK=True); with accumulation
//    (SINGA's corr=True, the default) what was not sent is added to the next
//    step's gradient. This is the store's "threshold" / "topk" gradient
//    compression with error feedback on or off.
// Half and sparse set the kvstore's gradient compression, so they need a
// store that compresses (the parameter-server types and "allreduce").
#pragma once

#include <cstddef>
#include <string>

namespace dt::train {

enum class SyncMode : int { kFull = 0, kHalf = 1, kPartial = 2, kSparse = 3 };

// "full", "half", "partial", "sparse"; "unknown" for a value out of range.
const char* sync_mode_name(SyncMode mode);

struct SyncOptions {
  static constexpr size_t kDefaultPartialChunkElements = 2097152;  // SINGA's threshold
  static constexpr double kDefaultSparseValue = 0.05;              // SINGA's spars

  SyncMode mode = SyncMode::kFull;
  // kPartial: how many elements a chunk gathers (see partial_update.h); > 0.
  size_t partial_chunk_elements = kDefaultPartialChunkElements;
  // kSparse: sparse_value is the fraction of each gradient sent, in (0, 1]
  // (top-K), rather than the magnitude an element must reach, > 0.
  bool sparse_topk = false;
  double sparse_value = kDefaultSparseValue;
  // kSparse: keep what was not sent for the next step (error feedback).
  bool sparse_accumulate = true;

  // Error(kInvalidArgument) naming the field: a mode out of range, a chunk
  // of 0 elements, a sparse value out of its range.
  void validate() const;
  // The gradient compression (ps/compression/compression_mode.h's canonical
  // text) the mode sets on the kvstore; "none" for kFull and kPartial.
  std::string compression_spec() const;
};

}  // namespace dt::train
