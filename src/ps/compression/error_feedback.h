// Error feedback (MXNet's residual, the "memory" of 1-bit SGD and top-k
// sparsification): what a lossy codec did not send this step is added to the
// next step's gradient, so nothing is dropped, only delayed. One object per
// worker per store, and one per server for the round sums its pulls send
// (ps/server/part_rounds.h); residuals are keyed by (key, begin), begin
// being the part's first element in the key's flattened tensor, so a store
// that splits a key into parts (ps::KeyPlacement) compresses and compensates
// each part on its own.
//
// Per step and part, the store does:
//   copy the gradient part into its send buffer c
//   feedback.compensate(key, begin, c, n)       c += residual
//   codec.encode(c, n, message, ...)
//   feedback.update(key, begin, c, n, codec, message, size)
//                                               residual = c - decoded(message)
// so that over any number of steps, for every element,
//   sum of the gradients == sum of what was decoded + the residual,
// up to the rounding of the float additions (exactly, when they are exact).
//
// A residual that keeps growing means the threshold (1bit, 2bit with
// magnitude=threshold) is far below the gradients: every step sends
// +-threshold while the gradient is larger, so what is sent never catches
// up and training stalls (at chance, for MXNet's 0.5 on batch sums). update() watches for that on a sample of
// steps and says so once per object, through core::log at kWarning, naming
// a threshold that would fit.
//
// Threads: calls for different parts may run concurrently (the table of
// parts is locked; a part's residual is not); calls for one part must not.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "ps/compression/gradient_codec.h"

namespace dt::ps::compression {

class ErrorFeedback {
 public:
  // values[0, n) += the residual of part (key, begin); a part seen for the
  // first time starts with a zero residual of n elements. Error(kShapeMismatch)
  // when the part was seen with another n.
  void compensate(uint64_t key, int64_t begin, float* values, size_t n);

  // residual of (key, begin) = compensated - what encoded[0, size) decodes
  // to under codec: compensated is the buffer compensate() filled and
  // encode() read. Error(kShapeMismatch) as compensate(). A decoding error
  // (bytes that are not what encode() wrote) propagates and restarts the
  // part's residual from zero, a defined state rather than a half-written one.
  void update(uint64_t key, int64_t begin, const float* compensated, size_t n, const GradientCodec& codec,
              const uint8_t* encoded, size_t size);

  // The residual of part (key, begin) = n zeros: what was not sent is
  // dropped (a sender that sent its compensated values in full instead).
  void reset(uint64_t key, int64_t begin, size_t n);
  // The residual of part (key, begin) = values[0, n): another sender's, whose
  // part this one takes over (a server's new copy of a part). Error
  // (kShapeMismatch) as compensate().
  void restore(uint64_t key, int64_t begin, const float* values, size_t n);

  // The residual of a part, nullptr when the part has not been seen; valid
  // until clear(). For checkpoints and tests.
  const std::vector<float>* residual(uint64_t key, int64_t begin) const;
  size_t num_parts() const;
  // Forgets every residual (a new training run, or compression switched off).
  void clear();
  // Whether the growing-residual warning was given (it is given once).
  bool warned() const { return warned_.load(); }

 private:
  struct Part {
    std::vector<float> residual;
    uint64_t updates = 0;
    double last_mean = 0;  // mean |residual| at the last check
  };
  Part& part(uint64_t key, int64_t begin, size_t n);
  // On every kCheckEvery-th update of a part under 1bit or 2bit with magnitude=threshold until the
  // warning was given: mean_gradient is the mean |gradient| of this update.
  void check_growth(uint64_t key, Part& part, const GradientCodec& codec, double mean_gradient);

  mutable std::mutex mutex_;
  // unique_ptr: a part stays where it is while other parts are added.
  std::map<std::pair<uint64_t, int64_t>, std::unique_ptr<Part>> parts_;
  std::atomic<bool> warned_{false};
};

// What every sender of a part does, workers pushing and servers answering
// pulls alike: values[0, n) += the residual of (key, begin); out = the
// encoding of values (resized to its length); the residual = values - what
// out decodes to. feedback null: error feedback is off, values are encoded
// as they are. values holds the compensated gradient afterwards (a sender
// that cannot encode it may send it in full and reset() the residual). The
// codec's errors propagate.
void encode_with_feedback(const GradientCodec& codec, ErrorFeedback* feedback, uint64_t key, int64_t begin,
                          float* values, size_t n, std::vector<uint8_t>& out);

}  // namespace dt::ps::compression
