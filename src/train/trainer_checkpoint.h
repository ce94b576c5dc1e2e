// The trainer's checkpoint codec: a trainer's weights, optimizer state and
// progress as safetensors contents, and back. save_checkpoint writes these
// contents to a file, the all-reduce hand-over (train/join_hand_over.h)
// sends them as bytes; both read them back through decode_checkpoint.
//
// Layout: every parameter as "param/<name>", the optimizer state under
// "optim/", and metadata format = "disttrain.checkpoint", version 1, epoch,
// steps, the optimizer description as JSON and, when the net scales its
// loss, the scaler's scale (17 significant digits: it round-trips exactly),
// growth tracker and skipped steps.
//
// Pure functions over their arguments: any thread.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/ndarray.h"
#include "core/safetensors.h"
#include "nn/loss_scaler.h"
#include "nn/parameter.h"

namespace dt::train {

// The prefix of the optimizer's entries in a checkpoint, which optimizers
// and stores take their state under.
inline constexpr const char* kCheckpointOptimizerPrefix = "optim/";

// A loss scaler's state as a checkpoint carries it.
struct LossScalerState {
  double scale;
  int64_t growth_tracker;
  int64_t skipped_steps;
};

// What a trainer's checkpoint holds.
core::SafetensorsContents encode_checkpoint(const std::vector<nn::Parameter>& params,
                                            core::NamedArrays optimizer_state, int epoch, int64_t steps,
                                            const std::string& optimizer_json, const nn::LossScaler& scaler);

// A checkpoint read back, checked against the net's parameters. Its arrays
// point into the contents it was decoded from.
struct DecodedCheckpoint {
  int64_t epoch = 0;
  int64_t steps = 0;
  std::optional<LossScalerState> scaler;
  std::map<std::string, const core::NDArray*> params;  // by parameter name
  core::NamedArrays optimizer;                           // the "optim/" entries
};

// Everything is checked before the caller changes anything: Error(kIo) for
// contents that are not a disttrain checkpoint or malformed metadata,
// kNotFound for a parameter of params the contents lack, kShapeMismatch for
// one of another shape or dtype. path names the source in errors.
DecodedCheckpoint decode_checkpoint(const core::SafetensorsContents& contents,
                                    const std::vector<nn::Parameter>& params, const std::string& path);

}  // namespace dt::train
