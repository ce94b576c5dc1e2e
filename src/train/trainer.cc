#include "train/trainer.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <optional>
#include <string>

#include "core/error.h"
#include "core/safetensors.h"
#include "core/timeline/timeline.h"
#include "kvstore/kvstore_factory.h"
#include "train/batch_split.h"
#include "train/metrics.h"
#include "train/store_requirements.h"
#include "train/trainer_checkpoint.h"

namespace dt::train {

using core::Error;
using core::ErrorCode;
using core::NDArray;

Trainer::Trainer(std::shared_ptr<nn::Net> net, optim::OptimizerConfig optimizer,
                 std::shared_ptr<kvstore::KVStore> kv, TrainerOptions options)
    : net_(std::move(net)), config_(std::move(optimizer)), kv_(std::move(kv)),
      status_(TrainerStatus::from_environment(kv_.get())) {
  if (!net_) throw Error(ErrorCode::kInvalidArgument, "trainer needs a net");
  config_.validate();
  if (options.update_on_kvstore < -1 || options.update_on_kvstore > 1) {
    throw Error(ErrorCode::kInvalidArgument, "update_on_kvstore must be -1, 0 or 1");
  }
  replicas_.push_back(net_.get());
  for (const auto& ctx : options.extra_contexts) {
    if (!ctx) throw Error(ErrorCode::kInvalidArgument, "an extra context is null");
    extra_replicas_.push_back(net_->clone(ctx));
    replicas_.push_back(extra_replicas_.back().get());
  }
  if (!kv_ && replicas_.size() > 1) {
    // Gluon's default, kvstore='device': replicas on GPUs reduce there;
    // CPU replicas reduce on the CPU ("device" never falls back to it).
    // Mixed CPU and GPU replicas stay on "local", which takes both.
    bool all_gpu = true;
    for (const nn::Net* replica : replicas_) all_gpu &= !replica->context()->is_cpu();
    kv_ = kvstore::create_kvstore(all_gpu ? "device" : "local");
  }
  if (!kv_ && options.update_on_kvstore == 1) {
    throw Error(ErrorCode::kInvalidArgument, "update_on_kvstore = 1 needs a kvstore");
  }
  // -1 updates on the store only when it can run an optimizer (dist_nccl
  // only reduces); 1 with such a store fails at set_optimizer, naming why.
  update_on_kvstore_ =
      kv_ && options.update_on_kvstore != 0 && (options.update_on_kvstore == 1 || kv_->accepts_optimizer());
  update_on_kvstore_auto_ = options.update_on_kvstore == -1;
  sync_ = options.sync;
  sync_.validate();
  if (configure_store_for_sync_mode(sync_, kv_.get(), options.update_on_kvstore, !options.extra_contexts.empty())) {
    update_on_kvstore_ = false;
  }
  refuse_async_updates_on_workers(kv_.get(), update_on_kvstore_);
  // Partial steps exchange weights after the update, nothing during backward.
  overlap_ = overlap_wanted(options.overlap_communication) && kv_ && kv_->communicates_asynchronously() &&
             sync_.mode != SyncMode::kPartial;
  for (nn::Net* replica : replicas_) replica->set_loss_reduction("sum");

  const auto& params = net_->parameters();
  for (size_t i = 0; i < params.size(); ++i) {
    if (!params[i].auxiliary) learnable_.push_back(i);
  }
  if (sync_.mode == SyncMode::kPartial) {
    // SINGA partitions the parameters in the order backward yields them.
    partial_order_.assign(learnable_.rbegin(), learnable_.rend());
    std::vector<size_t> sizes;
    for (size_t index : partial_order_) sizes.push_back(params[index].value.size());
    partial_ = std::make_unique<PartialUpdate>(sizes, sync_.partial_chunk_elements);
  }
  if (!update_on_kvstore_) {
    for (size_t r = 0; r < replicas_.size(); ++r) local_optimizers_.push_back(optim::Optimizer::create(config_));
  }
}

Trainer::~Trainer() = default;

std::vector<kvstore::Key> Trainer::keys_for_all_replicas() const {
  std::vector<kvstore::Key> keys;
  keys.reserve(learnable_.size() * replicas_.size());
  for (size_t index : learnable_) {
    for (size_t r = 0; r < replicas_.size(); ++r) keys.push_back(index);
  }
  return keys;
}

std::vector<NDArray> Trainer::params_of_all_replicas(bool grads) const {
  std::vector<NDArray> arrays;
  arrays.reserve(learnable_.size() * replicas_.size());
  for (size_t index : learnable_) {
    for (nn::Net* replica : replicas_) {
      const nn::Parameter& p = replica->parameters()[index];
      arrays.push_back(grads ? p.grad : p.value);
    }
  }
  return arrays;
}

void Trainer::initialize_kvstore() {
  std::vector<kvstore::Key> keys(learnable_.begin(), learnable_.end());
  std::vector<NDArray> values;
  for (size_t index : learnable_) values.push_back(net_->parameters()[index].value);
  kv_->init(keys, values);
  if (update_on_kvstore_) {
    kv_->set_optimizer(config_);
    if (!pending_kv_state_.empty()) kv_->load_optimizer_state(pending_kv_state_, kCheckpointOptimizerPrefix);
    pending_kv_state_.clear();
  }
  // Everyone starts from the store's weights: in a distributed job those of
  // the worker whose init the store kept.
  kv_->pull(keys_for_all_replicas(), params_of_all_replicas(false), 0);
  phase_.on_store_initialized();
}

void Trainer::prepare_precision() {
  for (nn::Net* replica : replicas_) {
    if (replica == net_.get()) continue;
    if (replica->compute_dtype() != net_->compute_dtype()) {
      // The net's dtype was set after the replicas were cloned; before any
      // forward this is allowed, after it the replica says kBadState.
      replica->set_compute_dtype(net_->compute_dtype());
    }
    // The net's scaler is the one gradients_usable() updates: the replicas
    // scale their loss gradients by it, also when set_loss_scaler replaced
    // it after they were cloned.
    replica->set_loss_scaler(net_->loss_scaler());
  }
  if (pending_scaler_) {
    if (net_->loss_scaler().enabled()) {
      net_->loss_scaler().restore(pending_scaler_->scale, pending_scaler_->growth_tracker,
                                  pending_scaler_->skipped_steps);
    }
    pending_scaler_.reset();
  }
  if (update_on_kvstore_ &&
      !net_->precision().update_on_store_allowed(update_on_kvstore_, update_on_kvstore_auto_, store_initialized())) {
    // Loss scaling skips overflowed steps, which only the workers can: the
    // default store update moves to them, as for stores that run no optimizer.
    update_on_kvstore_ = false;
    refuse_async_updates_on_workers(kv_.get(), update_on_kvstore_);
    for (size_t r = 0; r < replicas_.size(); ++r) local_optimizers_.push_back(optim::Optimizer::create(config_));
    // A checkpoint's optimizer state, if one was loaded, was kept for the store.
    if (!pending_kv_state_.empty()) {
      for (auto& optimizer : local_optimizers_) optimizer->load_state(pending_kv_state_, kCheckpointOptimizerPrefix);
    }
    pending_kv_state_.clear();
  }
}

bool Trainer::gradients_usable() {
  // The gradients are reduced by now: every replica (and every worker of a
  // distributed job) holds the same sums, so one check decides for all.
  // The net's policy decides; a replica's own scaler (disabled, or in
  // another state) must not turn an overflowed step into an applied one.
  const bool apply = net_->precision().apply_update([this] { return net_->gradients_finite(); });
  if (net_->loss_scaler().enabled()) {
    for (nn::Net* replica : replicas_) {
      if (replica != net_.get()) replica->set_loss_scaler(net_->loss_scaler());
    }
  }
  return apply;
}

void Trainer::step(int64_t batch_size) {
  if (batch_size <= 0) throw Error(ErrorCode::kInvalidArgument, "step: batch_size must be positive");
  prepare_precision();
  const double rescale = 1.0 / static_cast<double>(batch_size);
  if (kv_ && !store_initialized()) {
    // The store's compression may have been set after construction.
    if (partial_) refuse_compressed_weights(*kv_);
    initialize_kvstore();
  }
  // The scale of a compression threshold, before this worker's first push
  // (a joined worker's store was initialized without a step).
  if (kv_) scale_compression_threshold(*kv_, rescale, compression_rescale_);

  if (!kv_) {
    if (gradients_usable()) {
      local_optimizers_[0]->set_rescale_grad(rescale);
      for (size_t index : learnable_) {
        nn::Parameter& p = net_->parameters()[index];
        if (p.grad_req != nn::GradReq::kNull) local_optimizers_[0]->update(index, p.value, p.grad);
      }
    }
  } else if (partial_) {
    // Each worker updates with its own gradients; then one chunk of
    // weights is averaged (the same chunk on every worker: they count the
    // same steps).
    if (gradients_usable()) update_replicas(rescale);
    std::vector<kvstore::Key> keys(partial_order_.begin(), partial_order_.end());
    std::vector<NDArray> weights;
    for (size_t index : partial_order_) weights.push_back(net_->parameters()[index].value);
    partial_->average(*kv_, keys, weights, steps_);
  } else if (update_on_kvstore_) {
    if (rescale != rescale_grad_) kv_->set_rescale_grad(rescale);
    const auto keys = keys_for_all_replicas();
    kv_->push(keys, params_of_all_replicas(true), 0);
    kv_->pull(keys, params_of_all_replicas(false), 0);
  } else {
    const auto keys = keys_for_all_replicas();
    const auto grads = params_of_all_replicas(true);
    kv_->pushpull(keys, grads, grads, 0);
    if (gradients_usable()) update_replicas(rescale);
  }
  rescale_grad_ = rescale;
  phase_.on_step_completed();
  ++steps_;
}

void Trainer::update_replicas(double rescale) {
  const core::timeline::Span span("train", "optimizer");
  for (size_t r = 0; r < replicas_.size(); ++r) {
    local_optimizers_[r]->set_rescale_grad(rescale);
    for (size_t index : learnable_) {
      nn::Parameter& p = replicas_[r]->parameters()[index];
      if (p.grad_req != nn::GradReq::kNull) local_optimizers_[r]->update(index, p.value, p.grad);
    }
  }
}

void Trainer::issue_exchange(size_t index) {
  std::vector<kvstore::Key> keys(replicas_.size(), index);
  std::vector<NDArray> grads, values;
  for (nn::Net* replica : replicas_) {
    grads.push_back(replica->parameters()[index].grad);
    values.push_back(replica->parameters()[index].value);
  }
  // With update_on_kvstore the store returns the updated weight: this
  // layer's backward is done, so nothing reads the weight until the next
  // forward, which runs after every request is waited for.
  const int priority = -static_cast<int>(index);
  kv_->pushpull_async(keys, grads, update_on_kvstore_ ? values : grads, priority);
  issued_[index] = true;
}

void Trainer::finish_overlapped_step(int64_t batch_size) {
  // Frozen parameters get no gradient-ready call but are exchanged every
  // step all the same, as the synchronous step does (dist_sync rounds).
  for (size_t index : learnable_) {
    if (!issued_[index]) issue_exchange(index);
  }
  core::timeline::Span wait("train", "wait", {"step", steps_});
  kv_->wait_all();
  wait.end();
  const double rescale = 1.0 / static_cast<double>(batch_size);
  if (!update_on_kvstore_ && gradients_usable()) update_replicas(rescale);
  rescale_grad_ = rescale;
  phase_.on_step_completed();
  ++steps_;
}

BatchResult Trainer::train_batch(const NDArray& data, const NDArray& labels) {
  if (!data.defined() || !labels.defined() || data.shape().ndim() == 0 || labels.shape().ndim() != 1 ||
      data.shape()[0] != labels.shape()[0]) {
    throw Error(ErrorCode::kShapeMismatch, "train_batch: data " + data.shape().to_string() + " and labels " +
                                               labels.shape().to_string() + " must share their first dim");
  }
  const int64_t rows = data.shape()[0];
  if (rows < static_cast<int64_t>(replicas_.size())) {
    throw Error(ErrorCode::kInvalidArgument, "train_batch: a batch of " + std::to_string(rows) + " samples for " +
                                                 std::to_string(replicas_.size()) + " devices");
  }
  prepare_precision();
  const core::timeline::Span step_span("train", "step", {"step", steps_});
  staged_data_.resize(replicas_.size());
  staged_labels_.resize(replicas_.size());
  // The first step initialises the store and runs synchronously.
  const bool overlap = overlap_ && store_initialized();
  if (overlap) {
    // The store must scale before the first gradient of this step arrives.
    const double rescale = 1.0 / static_cast<double>(rows);
    if (update_on_kvstore_ && rescale != rescale_grad_) kv_->set_rescale_grad(rescale);
    scale_compression_threshold(*kv_, rescale, compression_rescale_);
    issued_.assign(net_->parameters().size(), false);
  }
  const auto start = std::chrono::steady_clock::now();
  BatchResult result;
  double loss_sum = 0.0;
  try {
    for (size_t r = 0; r < replicas_.size(); ++r) {
      const auto [begin, end] = split_range(rows, r, replicas_.size());
      nn::Net& replica = *replicas_[r];
      const NDArray x = on_context(data.slice(begin, end), replica.context(), staged_data_[r]);
      const NDArray y = on_context(labels.slice(begin, end), replica.context(), staged_labels_[r]);
      replica.forward({x}, true);
      // A key's gradients are summed over the replicas: it is ready once
      // the last replica's backward has produced it.
      if (overlap && r + 1 == replicas_.size()) {
        loss_sum += replica.backward(y, [this](size_t index) { issue_exchange(index); });
      } else {
        loss_sum += replica.backward(y);
      }
      result.correct += count_correct(replica.output(0), y);
    }
  } catch (...) {
    // Requests already issued write into the net's arrays: let them end
    // (bounded) before the caller sees the error and touches the net.
    if (overlap) {
      try {
        kv_->wait_all();
      } catch (const Error&) {
      }
    }
    throw;
  }
  const double compute = seconds_since(start);
  compute_seconds_ += compute;
  if (overlap) {
    finish_overlapped_step(rows);
  } else {
    step(rows);
  }
  if (status_) {
    status_->batch_done(rows, compute, seconds_since(start) - compute, kv_ ? kv_->traffic() : core::Traffic{});
  }
  result.loss = loss_sum / static_cast<double>(rows);
  return result;
}

std::vector<uint8_t> Trainer::state_bytes() const {
  const core::SafetensorsContents checkpoint = checkpoint_contents();
  return core::safetensors_bytes(checkpoint.arrays, checkpoint.metadata);
}

void Trainer::load_state(const std::vector<uint8_t>& bytes) {
  phase_.require_fresh_for_checkpoint_load("load_state");
  const std::string what = "the state the workers handed over";
  load_checkpoint_contents(core::parse_safetensors(bytes, net_->context(), what), what);
}

void Trainer::set_learning_rate(double lr) {
  if (!(lr >= 0.0)) throw Error(ErrorCode::kInvalidArgument, "learning rate must be >= 0, got " + std::to_string(lr));
  for (auto& optimizer : local_optimizers_) optimizer->set_learning_rate(lr);
  // A store initialised later picks the rate up from the description.
  config_.set("learning_rate", lr);
  if (store_initialized() && update_on_kvstore_) kv_->set_learning_rate(lr);
}

double Trainer::learning_rate() const {
  if (!local_optimizers_.empty()) return local_optimizers_[0]->learning_rate();
  return config_.get_number("learning_rate", 0.0);
}

core::NamedArrays Trainer::optimizer_state() const {
  if (!local_optimizers_.empty()) return local_optimizers_[0]->state(kCheckpointOptimizerPrefix);
  if (store_initialized()) return kv_->optimizer_state(kCheckpointOptimizerPrefix);
  return pending_kv_state_;
}

void Trainer::save_checkpoint(const std::string& path) const {
  const core::SafetensorsContents checkpoint = checkpoint_contents();
  core::save_safetensors(path, checkpoint.arrays, checkpoint.metadata);
}

void Trainer::load_checkpoint(const std::string& path) {
  phase_.require_fresh_for_checkpoint_load("load_checkpoint");
  load_checkpoint_contents(core::load_safetensors(path, net_->context()), path);
}

core::SafetensorsContents Trainer::checkpoint_contents() const {
  return encode_checkpoint(net_->parameters(), optimizer_state(), epoch_, steps_, config_.to_json(),
                           net_->loss_scaler());
}

void Trainer::load_checkpoint_contents(const core::SafetensorsContents& contents, const std::string& path) {
  DecodedCheckpoint checkpoint = decode_checkpoint(contents, net_->parameters(), path);
  if (!local_optimizers_.empty()) {
    for (auto& optimizer : local_optimizers_) optimizer->load_state(checkpoint.optimizer, kCheckpointOptimizerPrefix);
  } else {
    pending_kv_state_ = std::move(checkpoint.optimizer);
  }
  for (nn::Net* replica : replicas_) {
    for (nn::Parameter& p : replica->parameters()) p.value.copy_from(*checkpoint.params.at(p.name));
  }
  epoch_ = static_cast<int>(checkpoint.epoch);
  steps_ = checkpoint.steps;
  pending_scaler_ = checkpoint.scaler;
}

}  // namespace dt::train
