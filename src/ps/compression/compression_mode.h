// Which gradient compression a distributed store applies to what workers
// send, and its one numeric parameter. Every worker and server of a job must
// agree on it: to_string() is canonical, so comparing the strings of two
// configs compares the configs, and parse(to_string()) gives the same config.
//
// Grammar of the text form (no spaces; names are lower case):
//   config := mode [ ":" field { "," field } ]
//   mode   := "none" | "fp16" | "bf16" | "2bit" | "1bit" | "topk" | "threshold"
//   field  := "threshold=" number      (2bit, 1bit, threshold)
//           | "gradient_scale=" number (2bit, 1bit, threshold)
//           | "magnitude=" ("mean" | "threshold")   (2bit)
//           | "fraction=" number       (topk)
//           | "error_feedback=" ("on" | "off")   (every mode but none)
//   number := a decimal or exponent float as std::from_chars reads it
//             (locale-independent; "inf", "nan" and hex are rejected)
// Examples: "2bit", "2bit:threshold=0.5", "topk:fraction=0.01,error_feedback=off".
// Each field may appear once. Defaults: 2bit and 1bit threshold 0.5 (MXNet's
// 2bit default); threshold and topk have no default value and must name it;
// error_feedback is on for every lossy mode (all but none); 2bit's magnitude
// is mean.
//
// magnitude is what a 2bit element that crossed the threshold decodes to.
// MXNet's 2bit sends +-threshold (magnitude=threshold); here, by default,
// +-the mean |value| of the part's elements that crossed it, sent once per
// part as a float32 before the codes (magnitude=mean; gradient_codec.h).
// The threshold still chooses which elements go. Why: no one threshold fits
// every layer of a net (LeNet's largest layer has gradients ~50x smaller
// than its smallest ones'): where the values far exceed the threshold,
// +-threshold sends a fraction of them and the rest waits in the residual
// for many steps, and where they stay below it they wait too. Sending the
// mean of what crossed keeps the large ones from waiting. Measured on LeNet,
// 2 workers x batch 64, 2 epochs, in one session: uncompressed 0.8778;
// magnitude=threshold 0.8415 at MXNet's 0.5 (no threshold came within 2
// points); magnitude=mean 0.8733 at 0.5 and 0.8675 at 0.125.
//
// gradient_scale puts the pushed values on the threshold's scale: the codecs
// compare a value v as v * gradient_scale, that is the raw values against
// threshold / gradient_scale, and 2bit/1bit send that raw size. Without it
// the threshold is on the raw values (scale 1). A trainer pushes the sum of
// its batch's B per-sample gradients and names gradient_scale = 1 / sqrt(B)
// before its first push (sqrt of its rescale_grad, 1 / B): the threshold is
// then on the scale of one sample's gradient, which does not change with
// B: a sum of B gradients whose spread dominates grows as sqrt(B).
// Measured on LeNet, 2 workers x batch 64, 2 epochs (none 0.878): on raw
// sums 0.5 stays at chance (2bit with magnitude=threshold) and 1bit at 1
// falls to 0.67; on the optimizer's scale (raw 0.5 * 64) both lag by 4-5
// points; at 0.5 * sqrt(64) 1bit ends at 0.873. Someone pushing gradients of their
// own names the scale in the spec: 1 / sqrt(B) for sums of B samples,
// sqrt(B) for their means.
#pragma once

#include <optional>
#include <string>

namespace dt::ps::compression {

enum class CompressionMode : int {
  kNone = 0,
  kFp16 = 1,
  kBf16 = 2,
  k2Bit = 3,
  k1Bit = 4,
  kTopK = 5,
  kThreshold = 6,
};

// The spelling of the grammar above ("none", "fp16", ..., "threshold").
const char* mode_name(CompressionMode mode);
// True for every mode but kNone: what is decoded can differ from what was encoded.
bool is_lossy(CompressionMode mode);
// kThreshold / k2Bit / k1Bit take a threshold, kTopK a fraction, the rest nothing.
bool takes_threshold(CompressionMode mode);
bool takes_fraction(CompressionMode mode);
// Only 2bit takes a magnitude.
bool takes_magnitude(CompressionMode mode);

// What a 2bit element that crossed the threshold decodes to (see above).
enum class Magnitude : int {
  kMean = 0,       // +-the mean |value| of the part's elements that crossed
  kThreshold = 1,  // +-the threshold, as MXNet's 2bit
};
// "mean" or "threshold", as the grammar spells them.
const char* magnitude_name(Magnitude magnitude);

struct CompressionConfig {
  CompressionMode mode = CompressionMode::kNone;
  // The threshold (2bit, 1bit, threshold: > 0 and finite as a float) or the
  // fraction of elements sent (topk: in (0, 1]); 0 for the other modes.
  // A double so that topk's k = ceil(fraction * n) is not skewed by float
  // rounding (0.1f * 10 is just above 1); codecs compare against
  // static_cast<float>(threshold_or_fraction).
  double threshold_or_fraction = 0;
  // Keep what was not sent and add it to the next gradient (error_feedback.h).
  bool error_feedback = false;
  // The factor on pushed values before they meet the threshold (see above),
  // for the modes that take one: > 0 and finite; 0 = not named, the
  // threshold is on the raw values. Last, so that {mode, value, feedback}
  // still builds a config.
  double gradient_scale = 0;
  // 2bit's decoded magnitude (see above); kMean for every other mode.
  Magnitude magnitude = Magnitude::kMean;

  // The config for mode with its default value and error feedback on when
  // lossy; Error(kInvalidArgument) for threshold and topk, which have no
  // default value.
  static CompressionConfig defaults(CompressionMode mode);
  // Parses the grammar above and validates; Error(kInvalidArgument) naming
  // the field (or the mode) and the offending text.
  static CompressionConfig parse(const std::string& text);

  // Error(kInvalidArgument) naming the field when a value is out of range or
  // given to a mode that takes none (error feedback with mode none included).
  void validate() const;
  // Canonical text: every field the mode takes (gradient_scale only when
  // named, magnitude only when not mean), in grammar order, numbers in the shortest form that reads back
  // to the same double.
  std::string to_string() const;

  // The threshold on the raw pushed values, threshold / gradient_scale (the
  // threshold itself without a scale); 0 for the modes without one.
  double raw_threshold() const;
  // The gradient_scale of a trainer's pushes, batch sums the optimizer
  // rescales by rescale_grad = 1 / B: sqrt(rescale_grad) (see above).
  static double batch_sum_gradient_scale(double rescale_grad);
  // This config with gradient_scale = scale when the mode takes a threshold
  // and names no scale yet; else this config unchanged. Error
  // (kInvalidArgument) for a scale that is not positive and finite, or that
  // leaves no float-sized raw threshold.
  CompressionConfig with_gradient_scale(double scale) const;
  // The config a job's nodes agree on when two workers set a and b: a when
  // they are equal; when they differ only in that one names no
  // gradient_scale yet (a worker whose trainer has not named it, or whose
  // program set the spec again after its trainer did), the one that names
  // it; nullopt for anything else.
  static std::optional<CompressionConfig> agree(const CompressionConfig& a, const CompressionConfig& b);

  bool operator==(const CompressionConfig& other) const {
    return mode == other.mode && threshold_or_fraction == other.threshold_or_fraction &&
           error_feedback == other.error_feedback && gradient_scale == other.gradient_scale &&
           magnitude == other.magnitude;
  }
  bool operator!=(const CompressionConfig& other) const { return !(*this == other); }
};

}  // namespace dt::ps::compression
