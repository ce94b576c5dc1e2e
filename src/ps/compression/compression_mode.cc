#include "ps/compression/compression_mode.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <string_view>

#include "core/error.h"

namespace dt::ps::compression {

using core::Error;
using core::ErrorCode;

namespace {

constexpr CompressionMode kAllModes[] = {CompressionMode::kNone, CompressionMode::kFp16, CompressionMode::kBf16,
                                         CompressionMode::k2Bit, CompressionMode::k1Bit, CompressionMode::kTopK,
                                         CompressionMode::kThreshold};

Error invalid(const std::string& message) { return Error(ErrorCode::kInvalidArgument, "gradient compression: " + message); }

std::string quoted(std::string_view text) { return "'" + std::string(text) + "'"; }

double parse_number(std::string_view field, std::string_view text) {
  double value = 0;
  const char* end = text.data() + text.size();
  const auto result = std::from_chars(text.data(), end, value, std::chars_format::general);
  if (text.empty() || result.ec != std::errc() || result.ptr != end || !std::isfinite(value)) {
    throw invalid(std::string(field) + " must be a finite number, not " + quoted(text));
  }
  return value;
}

bool parse_switch(std::string_view field, std::string_view text) {
  if (text == "on") return true;
  if (text == "off") return false;
  throw invalid(std::string(field) + " must be 'on' or 'off', not " + quoted(text));
}

std::string format_number(double value) {
  char buffer[64];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  return std::string(buffer, result.ptr);
}

}  // namespace

const char* mode_name(CompressionMode mode) {
  switch (mode) {
    case CompressionMode::kNone: return "none";
    case CompressionMode::kFp16: return "fp16";
    case CompressionMode::kBf16: return "bf16";
    case CompressionMode::k2Bit: return "2bit";
    case CompressionMode::k1Bit: return "1bit";
    case CompressionMode::kTopK: return "topk";
    case CompressionMode::kThreshold: return "threshold";
  }
  return "unknown";
}

bool is_lossy(CompressionMode mode) { return mode != CompressionMode::kNone; }

bool takes_threshold(CompressionMode mode) {
  return mode == CompressionMode::k2Bit || mode == CompressionMode::k1Bit || mode == CompressionMode::kThreshold;
}

bool takes_fraction(CompressionMode mode) { return mode == CompressionMode::kTopK; }

bool takes_magnitude(CompressionMode mode) { return mode == CompressionMode::k2Bit; }

const char* magnitude_name(Magnitude magnitude) {
  return magnitude == Magnitude::kThreshold ? "threshold" : "mean";
}

CompressionConfig CompressionConfig::defaults(CompressionMode mode) {
  CompressionConfig config;
  config.mode = mode;
  config.error_feedback = is_lossy(mode);
  if (mode == CompressionMode::k2Bit || mode == CompressionMode::k1Bit) {
    config.threshold_or_fraction = 0.5;
  } else if (mode == CompressionMode::kThreshold) {
    throw invalid("mode 'threshold' needs threshold=<value>");
  } else if (mode == CompressionMode::kTopK) {
    throw invalid("mode 'topk' needs fraction=<value>");
  } else if (mode != CompressionMode::kNone && mode != CompressionMode::kFp16 && mode != CompressionMode::kBf16) {
    throw invalid("unknown mode " + std::to_string(static_cast<int>(mode)));
  }
  return config;
}

CompressionConfig CompressionConfig::parse(const std::string& text) {
  const std::string_view all(text);
  const size_t colon = all.find(':');
  const std::string_view mode_text = all.substr(0, colon);
  CompressionMode mode = CompressionMode::kNone;
  bool known = false;
  for (CompressionMode candidate : kAllModes) {
    if (mode_text == mode_name(candidate)) {
      mode = candidate;
      known = true;
    }
  }
  if (!known) {
    throw invalid("mode must be one of none, fp16, bf16, 2bit, 1bit, topk, threshold; not " + quoted(mode_text) +
                  " (in " + quoted(all) + ")");
  }

  CompressionConfig config;
  config.mode = mode;
  config.error_feedback = is_lossy(mode);
  bool has_value = false;
  bool has_feedback = false;
  bool has_scale = false;
  bool has_magnitude = false;
  if (colon != std::string_view::npos) {
    std::string_view rest = all.substr(colon + 1);
    while (true) {
      const size_t comma = rest.find(',');
      const std::string_view field = rest.substr(0, comma);
      const size_t equals = field.find('=');
      if (equals == std::string_view::npos) {
        throw invalid("field " + quoted(field) + " is not name=value (in " + quoted(all) + ")");
      }
      const std::string_view name = field.substr(0, equals);
      const std::string_view value = field.substr(equals + 1);
      if (name == "threshold" || name == "fraction") {
        const bool applies = name == "threshold" ? takes_threshold(mode) : takes_fraction(mode);
        if (!applies) throw invalid("mode '" + std::string(mode_name(mode)) + "' takes no " + std::string(name));
        if (has_value) throw invalid(std::string(name) + " is given twice (in " + quoted(all) + ")");
        config.threshold_or_fraction = parse_number(name, value);
        has_value = true;
      } else if (name == "gradient_scale") {
        if (!takes_threshold(mode)) throw invalid("mode '" + std::string(mode_name(mode)) + "' takes no gradient_scale");
        if (has_scale) throw invalid("gradient_scale is given twice (in " + quoted(all) + ")");
        config.gradient_scale = parse_number(name, value);
        if (!(config.gradient_scale > 0)) {
          throw invalid("gradient_scale must be positive, not " + quoted(value) + " (in " + quoted(all) + ")");
        }
        has_scale = true;
      } else if (name == "magnitude") {
        if (!takes_magnitude(mode)) throw invalid("mode '" + std::string(mode_name(mode)) + "' takes no magnitude");
        if (has_magnitude) throw invalid("magnitude is given twice (in " + quoted(all) + ")");
        if (value == "mean") {
          config.magnitude = Magnitude::kMean;
        } else if (value == "threshold") {
          config.magnitude = Magnitude::kThreshold;
        } else {
          throw invalid("magnitude must be 'mean' or 'threshold', not " + quoted(value) + " (in " + quoted(all) + ")");
        }
        has_magnitude = true;
      } else if (name == "error_feedback") {
        if (has_feedback) throw invalid("error_feedback is given twice (in " + quoted(all) + ")");
        config.error_feedback = parse_switch(name, value);
        has_feedback = true;
      } else {
        throw invalid("unknown field " + quoted(name) + " (in " + quoted(all) +
                      "); fields are threshold, gradient_scale, magnitude, fraction, error_feedback");
      }
      if (comma == std::string_view::npos) break;
      rest = rest.substr(comma + 1);
    }
  }
  // defaults() throws for the modes whose value has no default.
  if (!has_value) config.threshold_or_fraction = defaults(mode).threshold_or_fraction;
  config.validate();
  return config;
}

void CompressionConfig::validate() const {
  bool known = false;
  for (CompressionMode candidate : kAllModes) known = known || candidate == mode;
  if (!known) throw invalid("unknown mode " + std::to_string(static_cast<int>(mode)));
  const std::string name = mode_name(mode);
  const double value = threshold_or_fraction;
  if (takes_threshold(mode)) {
    const float as_float = static_cast<float>(value);
    if (!std::isfinite(value) || !(value > 0) || !std::isfinite(as_float) || !(as_float > 0)) {
      throw invalid("threshold of mode '" + name + "' must be positive and finite as a float, not " +
                    format_number(value));
    }
    if (gradient_scale != 0) {
      const float raw = static_cast<float>(value / gradient_scale);
      if (!std::isfinite(gradient_scale) || !(gradient_scale > 0) || !std::isfinite(raw) || !(raw > 0)) {
        throw invalid("gradient_scale " + format_number(gradient_scale) + " of mode '" + name +
                      "' must be positive and finite and leave threshold / gradient_scale positive and finite as "
                      "a float");
      }
    }
  } else if (takes_fraction(mode)) {
    if (!(value > 0 && value <= 1)) {
      throw invalid("fraction of mode 'topk' must be in (0, 1], not " + format_number(value));
    }
  } else if (value != 0) {
    throw invalid("mode '" + name + "' takes no threshold or fraction, but has " + format_number(value));
  }
  if (gradient_scale != 0 && !takes_threshold(mode)) {
    throw invalid("mode '" + name + "' takes no gradient_scale, but has " + format_number(gradient_scale));
  }
  if (magnitude != Magnitude::kMean && !takes_magnitude(mode)) {
    throw invalid("mode '" + name + "' takes no magnitude, but has '" + magnitude_name(magnitude) + "'");
  }
  if (error_feedback && !is_lossy(mode)) throw invalid("error_feedback needs a lossy mode, not 'none'");
}

std::string CompressionConfig::to_string() const {
  std::string text = mode_name(mode);
  if (mode == CompressionMode::kNone) return text;
  text += ':';
  if (takes_threshold(mode)) text += "threshold=" + format_number(threshold_or_fraction) + ",";
  if (gradient_scale != 0) text += "gradient_scale=" + format_number(gradient_scale) + ",";
  if (magnitude != Magnitude::kMean) text += std::string("magnitude=") + magnitude_name(magnitude) + ",";
  if (takes_fraction(mode)) text += "fraction=" + format_number(threshold_or_fraction) + ",";
  text += error_feedback ? "error_feedback=on" : "error_feedback=off";
  return text;
}

double CompressionConfig::raw_threshold() const {
  if (!takes_threshold(mode)) return 0;
  return gradient_scale != 0 ? threshold_or_fraction / gradient_scale : threshold_or_fraction;
}

double CompressionConfig::batch_sum_gradient_scale(double rescale_grad) {
  if (!std::isfinite(rescale_grad) || !(rescale_grad > 0)) {
    throw invalid("rescale_grad must be positive and finite, not " + format_number(rescale_grad));
  }
  return std::sqrt(rescale_grad);
}

CompressionConfig CompressionConfig::with_gradient_scale(double scale) const {
  if (!std::isfinite(scale) || !(scale > 0)) {
    throw invalid("gradient_scale must be positive and finite, not " + format_number(scale));
  }
  if (!takes_threshold(mode) || gradient_scale != 0) return *this;
  CompressionConfig scaled = *this;
  scaled.gradient_scale = scale;
  scaled.validate();
  return scaled;
}

std::optional<CompressionConfig> CompressionConfig::agree(const CompressionConfig& a, const CompressionConfig& b) {
  if (a == b) return a;
  CompressionConfig a_unscaled = a, b_unscaled = b;
  a_unscaled.gradient_scale = b_unscaled.gradient_scale = 0;
  if (a_unscaled != b_unscaled || (a.gradient_scale != 0 && b.gradient_scale != 0)) return std::nullopt;
  return a.gradient_scale != 0 ? a : b;
}

}  // namespace dt::ps::compression
