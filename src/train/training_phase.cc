#include "train/training_phase.h"

#include <string>

#include "core/error.h"

namespace dt::train {

using core::Error;
using core::ErrorCode;

void TrainingPhase::on_store_initialized() {
  if (state_ != State::kFresh) {
    throw Error(ErrorCode::kInternal,
                std::string("trainer: the kvstore is initialised once, not again when ") + to_string(state_));
  }
  state_ = State::kStoreInitialized;
}

void TrainingPhase::require_fresh_for_checkpoint_load(const char* call) const {
  if (state_ != State::kFresh) {
    throw Error(ErrorCode::kBadState, std::string(call) + ": load checkpoints before the first training step");
  }
}

const char* to_string(TrainingPhase::State state) {
  switch (state) {
    case TrainingPhase::State::kFresh: return "fresh";
    case TrainingPhase::State::kStoreInitialized: return "store initialized";
    case TrainingPhase::State::kStepped: return "stepped";
  }
  return "unknown";
}

}  // namespace dt::train
