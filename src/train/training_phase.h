// TrainingPhase: where a Trainer is in its life, as one explicit state
// instead of separate flags, with the calls each state refuses.
//
//   kFresh --(first step, with a kvstore: the store is initialised)--> kStoreInitialized
//   kFresh --(first step completes, no kvstore)------------------------> kStepped
//   kStoreInitialized --(a step completes)-----------------------------> kStepped
//   kStepped --(a step completes)--------------------------------------> kStepped
//
// kFresh: nothing has touched the kvstore yet, so a checkpoint may be loaded
//   (its optimizer state waits for the store, its loss-scaler state for the
//   first step, and a default store update may still move to the workers
//   for loss scaling). A step that fails before the store is
//   initialised leaves the trainer here.
// kStoreInitialized: the store holds the weights and, with update_on_kvstore,
//   the optimizer; a first step that failed after that stays here. Steps
//   overlap communication from now on (the first one, initialising the
//   store, is synchronous).
// kStepped: at least one step completed.
// Outside kFresh, load_checkpoint is Error(kBadState): the store and the
// replicas already share weights that a load would change on one side only.
#pragma once

namespace dt::train {

class TrainingPhase {
 public:
  enum class State { kFresh, kStoreInitialized, kStepped };

  State state() const { return state_; }
  // Whether the kvstore was initialised (only a trainer with one leaves
  // kFresh through kStoreInitialized).
  bool store_initialized(bool has_kvstore) const { return has_kvstore && state_ != State::kFresh; }

  // kFresh -> kStoreInitialized; Error(kInternal) from any other state (the
  // store is initialised once).
  void on_store_initialized();
  // Any state -> kStepped.
  void on_step_completed() { state_ = State::kStepped; }
  // Error(kBadState), saying "<call>: ...", outside kFresh.
  void require_fresh_for_checkpoint_load(const char* call) const;

 private:
  State state_ = State::kFresh;
};

// "fresh", "store initialized", "stepped": for messages and test output.
const char* to_string(TrainingPhase::State state);

}  // namespace dt::train
