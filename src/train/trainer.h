// The trainer: a net, an optimizer description and a kvstore, with Gluon's
// Trainer semantics.
//  - Gradients are those of the summed loss over the batch (the trainer
//    switches its nets' loss to sum reduction, as Gluon's loss.backward()
//    does), and step(batch_size) rescales them by 1/batch_size.
//  - With a kvstore, gradients of every replica are pushed under the
//    parameter's key and summed; with update_on_kvstore the store runs the
//    optimizer and the new weights are pulled into every replica, otherwise
//    the summed gradients are pulled and each replica applies the same
//    update. Without one, the single replica updates itself.
//  - A net on a GPU trains there: batches (host memory from the loader) are
//    copied to its device, the optimizer updates run as CUDA kernels on the
//    device's stream, and only the loss and accuracy come back to the host.
//    fit stages them (data/batch_stager.h): batch k+1 is copied while step
//    k computes; on the CPU the staged batches are the loader's, bit for bit.
//  - The kvstore is initialised lazily at the first step (as Gluon does), so
//    a checkpoint can be loaded into a fresh trainer before training; the
//    states and the calls each refuses are in train/training_phase.h.
//  - The loss is the net's own (nn/net.h): training runs the net's backward
//    and evaluation asks the net for its loss, so the trainer names none.
//  - With a kvstore that communicates asynchronously (dist_*), train_batch
//    overlaps communication with backward: as each parameter's gradient
//    becomes final, its pushpull is issued at once with priority
//    -parameter_index (MXNet's convention: the first layers, needed first by
//    the next forward, go first when requests queue up), and every request
//    is waited for before the update. The values exchanged are the same, so
//    the results are bit-identical to the synchronous step. The first step,
//    which initialises the store, is synchronous.
//  - Mixed precision (the net's compute dtype, nn/net.h; the decisions are
//    the net's nn/mixed_precision_policy.h): the replicas
//    follow the net's compute dtype. With loss scaling (float16), the
//    (unscaled float32) gradients are checked for inf/NaN after they were
//    reduced, so every replica and every worker of a job sees the same sums
//    and takes the same decision; on an overflow the update is skipped and
//    every replica's scaler backs off, otherwise they all count a clean
//    step. With update_on_kvstore the store would apply the gradients before
//    anyone could decide to skip them: update_on_kvstore = -1 then picks the
//    workers' update at the first step, and an explicit 1 is
//    Error(kNotSupported) there. Checkpoints carry the loss scaler's state
//    (scale, growth tracker, skipped steps), so a resumed float16 run goes
//    on with the scale it had.
//  - Sync modes (train/sync_mode.h, SINGA DistOpt's steps): full is the
//    above; half and sparse set the kvstore's gradient compression at
//    construction (Error(kInvalidArgument) when the store already
//    compresses otherwise, the store's Error(kNotSupported) when it does not
//    compress); partial updates each worker with its own gradients and
//    averages one chunk of weights per step (train/partial_update.h). It
//    needs the update on the workers (update_on_kvstore 1 is
//    Error(kInvalidArgument)), one replica per process and a store that
//    sums across workers without compressing ("allreduce", "dist_nccl",
//    "dist_sync", "dist_sync_device"); others are Error(kNotSupported).
// The training loop is this class; what it needs of the store is checked in
// train/store_requirements.h, checkpoints are encoded in
// train/trainer_checkpoint.h, and joining a running job goes through
// train/join_hand_over.h, from the one hook admit_joining_workers().
// Threading: one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/context.h"
#include "core/ndarray.h"
#include "core/safetensors.h"
#include "data/batch_loader.h"
#include "kvstore/kvstore.h"
#include "nn/net.h"
#include "optim/optimizer.h"
#include "optim/optimizer_config.h"
#include "train/metrics_log.h"
#include "train/partial_update.h"
#include "train/progress.h"
#include "train/trainer_status.h"
#include "train/sync_mode.h"
#include "train/trainer_checkpoint.h"
#include "train/training_phase.h"

namespace dt::train {

struct TrainerOptions {
  int update_on_kvstore = -1;  // -1: on the store when there is one
  // Devices besides the net's own: the net is replicated onto each and
  // every batch is split across all of them (split_and_load).
  std::vector<std::shared_ptr<core::Context>> extra_contexts;
  // Overlap communication with backward (see above): 1 on, 0 off, -1 the
  // environment's DT_KVSTORE_OVERLAP (0 or 1), on when unset. Only a kvstore
  // that communicates asynchronously overlaps; others are unaffected.
  int overlap_communication = -1;
  // How a step keeps the workers together (see above); full by default.
  SyncOptions sync;
};

struct BatchResult {
  double loss = 0.0;  // mean over the batch
  int64_t correct = 0;
};

struct EvalResult {
  double accuracy = 0.0;
  double loss = 0.0;
};

struct FitOptions {
  int epochs = 5;
  std::string metrics_path;     // empty: no metrics log
  std::string checkpoint_path;  // empty: no checkpoints
  // A job's checkpoint directory (train/checkpoint_directory.h): every
  // worker writes its checkpoint there after each epoch, and a trainer that
  // has not stepped yet first resumes from the directory's last complete
  // epoch, so the same command restarts a stopped job. Empty: none.
  std::string checkpoint_dir;
  ProgressMode progress = ProgressMode::kAuto;
};

class Trainer {
 public:
  // kv may be null; several contexts without a kvstore get an internal
  // one, as Gluon's kvstore='device' default: "device" when every replica
  // is on a GPU, else "local". Error(kInvalidArgument) for a bad optimizer description.
  Trainer(std::shared_ptr<nn::Net> net, optim::OptimizerConfig optimizer, std::shared_ptr<kvstore::KVStore> kv,
          TrainerOptions options = {});
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  // Reduce and update after forward/backward on the replicas.
  void step(int64_t batch_size);
  // Forward, backward and step on one batch split across the replicas.
  BatchResult train_batch(const core::NDArray& data, const core::NDArray& labels);
  // One epoch of loader in inference mode on the first replica.
  EvalResult evaluate(data::BatchLoader& loader);
  // Trains epochs [epoch(), options.epochs); returns the last epoch's record.
  EpochRecord fit(data::BatchLoader& train, data::BatchLoader* test, const FitOptions& options);
  // Letting workers into an all-reduce job (kvstore/elastic.h) from a loop
  // of one's own, as fit does: every worker calls it before each batch. On
  // a worker in the job it returns true, alike on every one, when joined
  // workers were let in just now; it has handed them this trainer's state
  // (weights, optimizer state, loss scaler, epoch() and steps()). On a
  // worker that joined the running job, the first call waits to be let in,
  // takes that state and returns true: the loop goes on from steps(). False
  // otherwise: before the first step (every worker alike), and on stores
  // that let nobody in this way (those of servers keep the weights there).
  bool admit_joining_workers();

  void set_learning_rate(double lr);
  // The current rate of the worker-side optimizer; with update_on_kvstore,
  // the base rate (the store applies any schedule).
  double learning_rate() const;
  bool update_on_kvstore() const { return update_on_kvstore_; }
  // The store the gradients go through (the internal one when none was
  // given); null for a single replica without one.
  const kvstore::KVStore* kvstore() const { return kv_.get(); }
  // Whether train_batch overlaps communication with backward.
  bool overlaps_communication() const { return overlap_; }
  const SyncOptions& sync_options() const { return sync_; }
  int epoch() const { return epoch_; }
  // Steps taken, including those whose update loss scaling skipped.
  int64_t steps() const { return steps_; }
  // Steps whose update was skipped because the gradients overflowed.
  int64_t skipped_steps() const { return net_->loss_scaler().skipped_steps(); }
  // Where the trainer is in its life (train/training_phase.h).
  TrainingPhase::State state() const { return phase_.state(); }
  // Seconds spent in forward/backward since construction (for benchmarks).
  double compute_seconds() const { return compute_seconds_; }

  // Weights, optimizer state and progress in one safetensors file. Loading is
  // allowed before the first step only (Error(kBadState) after).
  void save_checkpoint(const std::string& path) const;
  void load_checkpoint(const std::string& path);

 private:
  void initialize_kvstore();
  // A worker that joined a running job: initialises the store (taking the
  // servers' weights), moves epoch_ and steps_ to the job's step and
  // returns how many batches of that epoch the job trained already.
  // Error(kNotSupported) when the workers run the optimizer.
  // In an all-reduce job the workers hold the weights: it takes the
  // workers' state as they hand it over (kvstore/elastic.h), and returns
  // how many batches of its epoch they trained already.
  int64_t join_running_job(int64_t batches_per_epoch);
  // Whether this is a worker that joined a running job and has not trained
  // or taken any state yet; and one of an all-reduce job (the workers hold
  // the weights), which takes the workers' state.
  bool joined_and_fresh() const;
  bool awaits_handed_state() const { return joined_and_fresh() && !update_on_kvstore_; }
  // The checkpoint's contents as bytes, and back (fresh trainers only, as
  // load_checkpoint): what workers hand a joined one.
  std::vector<uint8_t> state_bytes() const;
  void load_state(const std::vector<uint8_t>& bytes);
  // What a checkpoint holds (save_checkpoint writes it, state_bytes encodes
  // it), and taking it in; path names its source in errors.
  core::SafetensorsContents checkpoint_contents() const;
  void load_checkpoint_contents(const core::SafetensorsContents& contents, const std::string& path);
  bool store_initialized() const { return phase_.store_initialized(kv_ != nullptr); }
  // Brings the replicas to the net's compute dtype and loss scaler, and
  // the update side to what the net's precision policy allows (see above).
  void prepare_precision();
  // With loss scaling: whether the reduced gradients are finite, recorded
  // in every replica's scaler; true (apply the update) without.
  bool gradients_usable();
  // The worker-side update after the store reduced the gradients.
  void update_replicas(double rescale);
  // Overlapped steps: one parameter's exchange, issued during backward; and
  // the rest of the step once backward is done.
  void issue_exchange(size_t index);
  void finish_overlapped_step(int64_t batch_size);
  std::vector<kvstore::Key> keys_for_all_replicas() const;
  std::vector<core::NDArray> params_of_all_replicas(bool grads) const;
  core::NamedArrays optimizer_state() const;

  std::shared_ptr<nn::Net> net_;
  std::vector<std::unique_ptr<nn::Net>> extra_replicas_;
  std::vector<nn::Net*> replicas_;  // net_ first
  std::vector<size_t> learnable_;   // indices of parameters with gradients
  optim::OptimizerConfig config_;
  std::shared_ptr<kvstore::KVStore> kv_;
  bool update_on_kvstore_ = false;
  // update_on_kvstore was -1: the trainer may still choose the worker side
  // before the first step (float16 loss scaling needs it).
  bool update_on_kvstore_auto_ = false;
  bool overlap_ = false;
  SyncOptions sync_;
  // Partial mode: the chunks, over the learnable parameters in backward
  // order (partial_order_: their indices).
  std::unique_ptr<PartialUpdate> partial_;
  std::vector<size_t> partial_order_;
  std::vector<bool> issued_;  // per parameter: exchanged during this backward
  std::vector<std::unique_ptr<optim::Optimizer>> local_optimizers_;  // one per replica
  TrainingPhase phase_;
  // Set in kFresh only: a checkpoint's optimizer state, for the store's
  // optimizer when it is initialised.
  core::NamedArrays pending_kv_state_;
  // Set in kFresh only: a checkpoint's loss-scaler state, restored at the
  // first step when the net scales its loss then (its compute dtype may be
  // set after loading).
  std::optional<LossScalerState> pending_scaler_;
  double rescale_grad_ = 0.0;
  // The rescale the store's compression threshold was last scaled for (0:
  // not yet): parsing and comparing the store's spec once per batch size,
  // not once per step.
  double compression_rescale_ = 0.0;
  int epoch_ = 0;
  int64_t steps_ = 0;
  double compute_seconds_ = 0.0;
  std::vector<core::NDArray> staged_data_;    // batch slices copied to other devices
  std::vector<core::NDArray> staged_labels_;
  core::NDArray eval_staging_;
  core::NDArray eval_label_staging_;
  std::unique_ptr<TrainerStatus> status_;  // dtrun's live summary (DT_STATUS_FILE or relayed), else null
};

}  // namespace dt::train
