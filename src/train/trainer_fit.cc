// The epoch loop of a Trainer: fit (batches through the batch stager,
// progress, metrics log, checkpoint directory, workers joining a running
// job) and evaluate. trainer.cc holds the step; this file what repeats it.
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "core/error.h"
#include "data/batch_stager.h"
#include "train/batch_split.h"
#include "train/checkpoint_directory.h"
#include "train/join_hand_over.h"
#include "train/metrics.h"
#include "train/trainer.h"

namespace dt::train {

using core::Error;
using core::ErrorCode;
using core::NDArray;

EvalResult Trainer::evaluate(data::BatchLoader& loader) {
  loader.start_epoch(0);
  data::Batch batch;
  EpochMetrics metrics;
  while (loader.next(batch)) {
    const NDArray x = on_context(batch.images, net_->context(), eval_staging_);
    // The loss runs where the logits are: a GPU net's labels go there too.
    const NDArray y = on_context(batch.labels, net_->context(), eval_label_staging_);
    net_->forward({x}, false);
    // The net's own loss, summed (the reduction the constructor set).
    const double loss_sum = net_->loss(y);
    const int64_t n = batch.size();
    metrics.add(loss_sum / static_cast<double>(n), count_correct(net_->output(0), y), n);
  }
  return EvalResult{metrics.accuracy(), metrics.mean_loss()};
}

EpochRecord Trainer::fit(data::BatchLoader& train, data::BatchLoader* test, const FitOptions& options) {
  if (options.epochs < 0) throw Error(ErrorCode::kInvalidArgument, "fit: epochs must not be negative");
  const int64_t total = train.batches_per_epoch();
  // A worker that joined a running job (a restarted one, under
  // DT_WORKER_LOSS=continue) goes on where the job is: the servers' weights
  // and optimizer state, and the step their rounds have reached; its
  // metrics log goes on too. It resumes nothing from the checkpoint
  // directory: the job's state is newer.
  const bool joining = joined_and_fresh();
  int64_t batches_to_skip = 0;
  if (joining) batches_to_skip = join_running_job(total);
  // An all-reduce job lets joined workers in before a batch (the store's
  // elastic facet): a joined worker was let in before the first it trains.
  bool let_workers_in = !joining;
  std::unique_ptr<MetricsLog> log;
  if (!options.metrics_path.empty()) log = std::make_unique<MetricsLog>(options.metrics_path, epoch_ > 0);
  Progress progress(options.progress);
  EpochRecord record;
  std::optional<CheckpointDirectory> directory;
  if (!options.checkpoint_dir.empty()) {
    directory.emplace(options.checkpoint_dir, kv_ ? kv_->rank() : 0, kv_ ? kv_->num_workers() : 1);
    if (steps_ == 0 && epoch_ == 0 && !joining) {
      if (const std::optional<int> done = directory->last_complete_epoch(); done && *done > 0) {
        load_checkpoint(directory->resume_file(*done));
        progress.resumed(*done, options.epochs, options.checkpoint_dir);
      }
    }
  }
  // Batch k+1 goes to the net's device while step k computes.
  data::BatchStager stager(train, net_->context());
  while (epoch_ < options.epochs) {
    stager.start_epoch(epoch_);
    EpochMetrics metrics;
    const auto start = std::chrono::steady_clock::now();
    const double compute_before = compute_seconds_;
    const core::Traffic traffic_before = kv_ ? kv_->traffic() : core::Traffic{};
    data::Batch batch;
    int64_t done = 0;
    // The batches of this epoch the job trained before this worker joined.
    for (; batches_to_skip > 0 && stager.next(batch); --batches_to_skip) ++done;
    while (stager.next(batch)) {
      if (let_workers_in) admit_joining_workers();
      let_workers_in = true;
      const BatchResult r = train_batch(batch.images, batch.labels);
      metrics.add(r.loss, r.correct, batch.size());
      ++done;
      progress.batch(epoch_, done, total, metrics.mean_loss(), metrics.accuracy(),
                     static_cast<double>(metrics.samples()) / seconds_since(start));
    }
    record = metrics.record(epoch_ + 1, seconds_since(start), compute_seconds_ - compute_before,
                            kv_ ? kv_->traffic() - traffic_before : core::Traffic{});
    if (test != nullptr) record.test_accuracy = evaluate(*test).accuracy;
    ++epoch_;
    if (log) log->write(record);
    progress.epoch_end(record, options.epochs);
    if (!options.checkpoint_path.empty()) save_checkpoint(options.checkpoint_path);
    if (directory) {
      save_checkpoint(directory->worker_file(epoch_));
      directory->commit(epoch_, kv_.get());
    }
  }
  return record;
}

bool Trainer::admit_joining_workers() {
  if (awaits_handed_state()) {
    join_running_job(0);
    return true;
  }
  kvstore::Elastic* elastic = kv_ ? kv_->elastic() : nullptr;  // null: nobody joins
  if (!elastic || !store_initialized() || !elastic->admit_joining_workers()) return false;
  elastic->hand_over_state(state_bytes());
  return true;
}

bool Trainer::joined_and_fresh() const {
  return joined_running_job(kv_.get()) && steps_ == 0 && epoch_ == 0 && !store_initialized();
}

int64_t Trainer::join_running_job(int64_t batches_per_epoch) {
  // A store without an optimizer spans workers that each hold the weights
  // (an all-reduce job): they hand over their state, checkpoint and
  // progress alike.
  const bool handed_over = !update_on_kvstore_;
  if (handed_over) load_state(take_handed_over_state(*kv_));
  prepare_precision();
  if (!update_on_kvstore_ && !handed_over) throw joined_job_refusal();
  initialize_kvstore();  // servers: the weights of the round before the first it pushes
  if (handed_over) return join_at_handed_state(epoch_, steps_, batches_per_epoch);
  return join_at_servers_round(*kv_, batches_per_epoch, epoch_, steps_);
}

}  // namespace dt::train
