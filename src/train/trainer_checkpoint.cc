#include "train/trainer_checkpoint.h"

#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <utility>

#include "core/error.h"

namespace dt::train {

using core::Error;
using core::ErrorCode;
using core::NDArray;

namespace {

constexpr const char* kParamPrefix = "param/";
constexpr const char* kCheckpointFormat = "disttrain.checkpoint";

}  // namespace

core::SafetensorsContents encode_checkpoint(const std::vector<nn::Parameter>& params,
                                            core::NamedArrays optimizer_state, int epoch, int64_t steps,
                                            const std::string& optimizer_json, const nn::LossScaler& scaler) {
  core::NamedArrays entries;
  for (const nn::Parameter& p : params) entries.emplace_back(kParamPrefix + p.name, p.value);
  for (auto& entry : optimizer_state) entries.push_back(std::move(entry));
  std::map<std::string, std::string> metadata = {
      {"format", kCheckpointFormat},
      {"version", "1"},
      {"epoch", std::to_string(epoch)},
      {"steps", std::to_string(steps)},
      {"optimizer", optimizer_json},
  };
  if (scaler.enabled()) {
    char scale[32];
    std::snprintf(scale, sizeof(scale), "%.17g", scaler.scale());  // round-trips exactly
    metadata["loss_scale"] = scale;
    metadata["loss_scale_growth_tracker"] = std::to_string(scaler.growth_tracker());
    metadata["loss_scale_skipped_steps"] = std::to_string(scaler.skipped_steps());
  }
  return core::SafetensorsContents{std::move(entries), std::move(metadata)};
}

DecodedCheckpoint decode_checkpoint(const core::SafetensorsContents& contents,
                                    const std::vector<nn::Parameter>& params, const std::string& path) {
  if (contents.metadata.count("format") == 0 || contents.metadata.at("format") != kCheckpointFormat) {
    throw Error(ErrorCode::kIo, path + " is not a disttrain checkpoint (metadata format is not " +
                                    kCheckpointFormat + ")");
  }
  // Progress counters first: a malformed file must fail before anything changes.
  const auto number = [&](const char* key) -> int64_t {
    auto it = contents.metadata.find(key);
    if (it == contents.metadata.end()) return 0;
    char* end = nullptr;
    errno = 0;
    const long long value = std::strtoll(it->second.c_str(), &end, 10);
    if (it->second.empty() || *end != '\0' || errno != 0 || value < 0 || value > INT32_MAX) {
      throw Error(ErrorCode::kIo, path + ": checkpoint metadata \"" + key + "\" is \"" + it->second +
                                      "\", not a count");
    }
    return value;
  };
  DecodedCheckpoint out;
  out.epoch = number("epoch");
  out.steps = number("steps");
  if (auto it = contents.metadata.find("loss_scale"); it != contents.metadata.end()) {
    char* end = nullptr;
    const double scale = std::strtod(it->second.c_str(), &end);
    if (it->second.empty() || *end != '\0' || !std::isfinite(scale) || scale <= 0.0) {
      throw Error(ErrorCode::kIo, path + ": checkpoint metadata \"loss_scale\" is \"" + it->second +
                                      "\", not a positive number");
    }
    out.scaler = LossScalerState{scale, number("loss_scale_growth_tracker"), number("loss_scale_skipped_steps")};
  }
  for (const auto& [name, array] : contents.arrays) {
    if (name.rfind(kParamPrefix, 0) == 0) out.params[name.substr(std::string(kParamPrefix).size())] = &array;
    if (name.rfind(kCheckpointOptimizerPrefix, 0) == 0) out.optimizer.emplace_back(name, array);
  }
  // Check every parameter before changing any.
  for (const nn::Parameter& p : params) {
    auto it = out.params.find(p.name);
    if (it == out.params.end()) throw Error(ErrorCode::kNotFound, path + " lacks parameter " + p.name);
    if (it->second->shape() != p.value.shape() || it->second->dtype() != p.value.dtype()) {
      throw Error(ErrorCode::kShapeMismatch, path + ": parameter " + p.name + " is " + it->second->shape().to_string() +
                                                 " in the file and " + p.value.shape().to_string() + " in the net");
    }
  }
  return out;
}

}  // namespace dt::train
