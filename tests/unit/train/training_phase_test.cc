#include "train/training_phase.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "core/error.h"

namespace dt::train {
namespace {

using State = TrainingPhase::State;

// The error a checkpoint load gets in this phase; none when it is allowed.
std::optional<core::ErrorCode> code_of_checkpoint_load(const TrainingPhase& phase) {
  try {
    phase.require_fresh_for_checkpoint_load("load_checkpoint");
  } catch (const core::Error& e) {
    EXPECT_NE(std::string(e.what()).find("load_checkpoint: "), std::string::npos) << e.what();
    return e.code();
  }
  return std::nullopt;
}

TEST(TrainingPhase, StartsFreshAndAllowsACheckpointLoad) {
  TrainingPhase phase;
  EXPECT_EQ(phase.state(), State::kFresh);
  EXPECT_FALSE(phase.store_initialized(true));
  EXPECT_FALSE(phase.store_initialized(false));
  EXPECT_EQ(code_of_checkpoint_load(phase), std::nullopt);
}

TEST(TrainingPhase, FreshToStoreInitializedToStepped) {
  TrainingPhase phase;
  phase.on_store_initialized();
  EXPECT_EQ(phase.state(), State::kStoreInitialized);
  EXPECT_TRUE(phase.store_initialized(true));
  EXPECT_EQ(code_of_checkpoint_load(phase), core::ErrorCode::kBadState);
  phase.on_step_completed();
  EXPECT_EQ(phase.state(), State::kStepped);
  EXPECT_TRUE(phase.store_initialized(true));
  EXPECT_EQ(code_of_checkpoint_load(phase), core::ErrorCode::kBadState);
}

TEST(TrainingPhase, FreshToSteppedWithoutAStore) {
  TrainingPhase phase;
  phase.on_step_completed();
  EXPECT_EQ(phase.state(), State::kStepped);
  EXPECT_FALSE(phase.store_initialized(false));
  EXPECT_EQ(code_of_checkpoint_load(phase), core::ErrorCode::kBadState);
  phase.on_step_completed();
  EXPECT_EQ(phase.state(), State::kStepped);
}

TEST(TrainingPhase, TheStoreIsInitialisedOnlyOnce) {
  TrainingPhase initialized;
  initialized.on_store_initialized();
  EXPECT_THROW(initialized.on_store_initialized(), core::Error);
  EXPECT_EQ(initialized.state(), State::kStoreInitialized);
  TrainingPhase stepped;
  stepped.on_step_completed();
  try {
    stepped.on_store_initialized();
    ADD_FAILURE() << "initialised the store after a step";
  } catch (const core::Error& e) {
    EXPECT_EQ(e.code(), core::ErrorCode::kInternal);
  }
  EXPECT_EQ(stepped.state(), State::kStepped);
}

TEST(TrainingPhase, NamesEveryState) {
  EXPECT_STREQ(to_string(State::kFresh), "fresh");
  EXPECT_STREQ(to_string(State::kStoreInitialized), "store initialized");
  EXPECT_STREQ(to_string(State::kStepped), "stepped");
}

}  // namespace
}  // namespace dt::train
