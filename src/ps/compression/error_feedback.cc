#include "ps/compression/error_feedback.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>
#include <string>

#include "core/error.h"
#include "core/log.h"

namespace dt::ps::compression {

using core::Error;
using core::ErrorCode;

namespace {

// Checks sample every kCheckEvery-th update of a part: the growth they look
// for is steady, so a sample sees it, and a healthy run pays one pass over
// its residuals per kCheckEvery steps.
constexpr uint64_t kCheckEvery = 8;
// Under 2bit a residual stays below the threshold while the gradients fit
// (an element sends +-threshold once its residual reaches it), under 1bit
// below about twice; a mean of kGrowthFactor thresholds, larger at two checks
// in a row, is a residual that only grows.
constexpr double kGrowthFactor = 4;
// The threshold the warning suggests, in mean |gradient| of the part that
// grew: twice it kept every part of LeNet from growing under 1bit (half
// of it did not).
constexpr double kFitFactor = 2;

// The modes whose decoded values are +-threshold: where the gradients
// exceed it, what is sent cannot keep up. 2bit with magnitude=mean sends the
// mean of what crossed instead, so its residual does not run away, and its
// threshold may sit far below the gradients (every element then goes).
bool watched(const CompressionConfig& config) {
  return config.mode == CompressionMode::k1Bit ||
         (config.mode == CompressionMode::k2Bit && config.magnitude == Magnitude::kThreshold);
}

// value rounded up to one significant digit (0.0372 -> 0.04, 31 -> 40).
double round_up_to_one_digit(double value) {
  if (!(value > 0) || !std::isfinite(value)) return value;
  const double unit = std::pow(10.0, std::floor(std::log10(value)));
  return std::ceil(value / unit - 1e-9) * unit;
}

std::string number(double value) {
  std::ostringstream text;
  text << std::setprecision(3) << value;
  return text.str();
}

}  // namespace

ErrorFeedback::Part& ErrorFeedback::part(uint64_t key, int64_t begin, size_t n) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto& slot = parts_[{key, begin}];
  if (!slot) {
    slot = std::make_unique<Part>();
    slot->residual.assign(n, 0.0f);
  }
  if (slot->residual.size() != n) {
    throw Error(ErrorCode::kShapeMismatch, "error feedback: key " + std::to_string(key) + " part at " +
                                               std::to_string(begin) + " has " +
                                               std::to_string(slot->residual.size()) + " elements, now " +
                                               std::to_string(n));
  }
  return *slot;
}

void ErrorFeedback::compensate(uint64_t key, int64_t begin, float* values, size_t n) {
  const float* residual = part(key, begin, n).residual.data();
  for (size_t i = 0; i < n; ++i) values[i] += residual[i];
}

void ErrorFeedback::update(uint64_t key, int64_t begin, const float* compensated, size_t n,
                           const GradientCodec& codec, const uint8_t* encoded, size_t size) {
  Part& p = part(key, begin, n);
  std::vector<float>& residual = p.residual;
  const bool check = watched(codec.config()) && n > 0 && !warned_.load(std::memory_order_relaxed) &&
                     ++p.updates % kCheckEvery == 0;
  // This step's gradient is what compensate() added the old residual to.
  double gradient_sum = 0;
  if (check) {
    for (size_t i = 0; i < n; ++i) gradient_sum += std::fabs(static_cast<double>(compensated[i]) - residual[i]);
  }
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
  if (check) check_growth(key, p, codec, gradient_sum / static_cast<double>(n));
}

void ErrorFeedback::check_growth(uint64_t key, Part& p, const GradientCodec& codec, double mean_gradient) {
  double sum = 0;
  for (float r : p.residual) sum += std::fabs(r);
  const double mean = sum / static_cast<double>(p.residual.size());
  const CompressionConfig& config = codec.config();
  const double limit = kGrowthFactor * config.raw_threshold();
  const bool growing = mean > limit && p.last_mean > limit && mean > p.last_mean;
  p.last_mean = mean;
  if (!growing || warned_.exchange(true)) return;
  // On the threshold's own scale, the one the user chose it on.
  const double scale = config.gradient_scale != 0 ? config.gradient_scale : 1.0;
  const double fit = round_up_to_one_digit(kFitFactor * mean_gradient * scale);
  CompressionConfig fitting = config;
  fitting.threshold_or_fraction = fit;
  core::log(core::LogLevel::kWarning, "compression",
            std::string("gradient compression ") + config.to_string() +
                ": the error-feedback residual keeps growing (key " + std::to_string(key) + ": mean |residual| " +
                number(mean * scale) + " after " + std::to_string(p.updates) + " steps, " +
                number(mean / config.raw_threshold()) + " times the threshold " + number(config.threshold_or_fraction) +
                "; mean |gradient| " + number(mean_gradient * scale) +
                (config.gradient_scale != 0 ? " on the threshold's scale" : "") +
                "): the threshold is far below the gradients and training will not learn; a threshold of about " +
                number(fit) + " would fit ('" + fitting.to_string() + "')");
}

void ErrorFeedback::reset(uint64_t key, int64_t begin, size_t n) {
  std::vector<float>& residual = part(key, begin, n).residual;
  std::fill(residual.begin(), residual.end(), 0.0f);
}

void ErrorFeedback::restore(uint64_t key, int64_t begin, const float* values, size_t n) {
  std::vector<float>& residual = part(key, begin, n).residual;
  std::copy(values, values + n, residual.begin());
}

const std::vector<float>* ErrorFeedback::residual(uint64_t key, int64_t begin) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = parts_.find({key, begin});
  return it == parts_.end() ? nullptr : &it->second->residual;
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
