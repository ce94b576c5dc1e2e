#include "train/trainer_status.h"

namespace dt::train {

std::unique_ptr<TrainerStatus> TrainerStatus::from_environment(kvstore::KVStore* store) {
  if (std::unique_ptr<core::StatusFile> file = core::StatusFile::from_environment("trainer")) {
    return std::make_unique<TrainerStatus>(std::move(file), nullptr);
  }
  if (store == nullptr || !core::StatusFile::relayed_from_environment()) return nullptr;
  return std::make_unique<TrainerStatus>(nullptr,
                                         [store](const core::WorkerStatus& numbers) { store->report_status(numbers); });
}

TrainerStatus::TrainerStatus(std::unique_ptr<core::StatusFile> file, Relay relay)
    : file_(std::move(file)), relay_(std::move(relay)) {}

TrainerStatus::~TrainerStatus() {
  // Relayed numbers went to the store with the last batch.
  if (file_ && numbers_.steps > 0) file_->write(core::format_status(numbers_));
}

void TrainerStatus::batch_done(int64_t images, double compute_s, double exchange_s, const core::Traffic& traffic) {
  const auto now = std::chrono::steady_clock::now();
  if (numbers_.steps == 0) {
    // The first batch began compute_s + exchange_s ago.
    started_ = now - std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                         std::chrono::duration<double>(compute_s + exchange_s));
  }
  ++numbers_.steps;
  numbers_.images += images;
  numbers_.compute_s += compute_s;
  numbers_.exchange_s += exchange_s;
  numbers_.traffic = traffic;
  numbers_.wall_s = std::chrono::duration<double>(now - started_).count();
  // Relayed numbers are only copied here: the heartbeats set the pace.
  if (!file_) {
    relay_(numbers_);
  } else if (file_->due(now)) {
    file_->write(core::format_status(numbers_), now);
  }
}

}  // namespace dt::train
