// dt_trainer_*: training loops.
#include <memory>
#include <string>

#include "c_api/api_guard.h"
#include "c_api/handles.h"
#include "c_api/options.h"
#include "data/batch_loader.h"
#include "dt_c_api.h"
#include "nn/net.h"
#include "train/trainer.h"

using dt::c_api::arg;
using dt::c_api::guarded;
using dt::c_api::handle;
using dt::core::Error;
using dt::core::ErrorCode;

dt_trainer::~dt_trainer() = default;

namespace {

void trainer_defaults(dt_trainer_options* options) { options->update_on_kvstore = -1; }

void fit_defaults(dt_fit_options* options) {
  options->epochs = 5;
  options->progress = -1;
}

dt::train::Trainer& trainer_of(dt_trainer* trainer) { return *handle(trainer, "trainer").impl; }

// The sync-mode fields of the options; each set only for its own mode, 0
// meaning SINGA's default.
dt::train::SyncOptions sync_options(const dt_trainer_options& o) {
  using dt::train::SyncMode;
  dt::train::SyncOptions sync;
  // Read as an int: a caller's out-of-range value is no dt_sync_mode, and
  // loading it as one would be undefined.
  const int mode = dt::c_api::raw_enum(o.sync_mode);
  switch (mode) {
    case DT_SYNC_FULL:
      sync.mode = SyncMode::kFull;
      break;
    case DT_SYNC_HALF:
      sync.mode = SyncMode::kHalf;
      break;
    case DT_SYNC_PARTIAL:
      sync.mode = SyncMode::kPartial;
      break;
    case DT_SYNC_SPARSE:
      sync.mode = SyncMode::kSparse;
      break;
    default:
      throw Error(ErrorCode::kInvalidArgument,
                  "options->sync_mode " + std::to_string(mode) +
                      " is none of DT_SYNC_FULL, DT_SYNC_HALF, DT_SYNC_PARTIAL, DT_SYNC_SPARSE");
  }
  const auto only_for = [&](bool set, dt_sync_mode owner, const char* field, const char* owner_name) {
    if (set && mode != static_cast<int>(owner)) {
      throw Error(ErrorCode::kInvalidArgument, std::string("options->") + field + " is set, but sync_mode is not " +
                                                   owner_name + ", the only mode that reads it");
    }
  };
  only_for(o.partial_chunk_elements != 0, DT_SYNC_PARTIAL, "partial_chunk_elements", "DT_SYNC_PARTIAL");
  only_for(o.sparse_topk != 0, DT_SYNC_SPARSE, "sparse_topk", "DT_SYNC_SPARSE");
  only_for(o.sparse_value != 0.0, DT_SYNC_SPARSE, "sparse_value", "DT_SYNC_SPARSE");
  only_for(o.sparse_no_accumulation != 0, DT_SYNC_SPARSE, "sparse_no_accumulation", "DT_SYNC_SPARSE");
  if (o.sparse_topk != 0 && o.sparse_topk != 1) {
    throw Error(ErrorCode::kInvalidArgument,
                "options->sparse_topk must be 0 or 1, not " + std::to_string(o.sparse_topk));
  }
  if (o.sparse_no_accumulation != 0 && o.sparse_no_accumulation != 1) {
    throw Error(ErrorCode::kInvalidArgument, "options->sparse_no_accumulation must be 0 or 1, not " +
                                                 std::to_string(o.sparse_no_accumulation));
  }
  if (o.partial_chunk_elements != 0) sync.partial_chunk_elements = o.partial_chunk_elements;
  sync.sparse_topk = o.sparse_topk == 1;
  if (o.sparse_value != 0.0) sync.sparse_value = o.sparse_value;
  sync.sparse_accumulate = o.sparse_no_accumulation == 0;
  return sync;
}

}  // namespace

extern "C" {

dt_status dt_trainer_options_init(dt_trainer_options* options, size_t struct_size) {
  return guarded(__func__, [&] { dt::c_api::init_struct(options, struct_size, trainer_defaults, "options"); });
}

dt_status dt_fit_options_init(dt_fit_options* options, size_t struct_size) {
  return guarded(__func__, [&] { dt::c_api::init_struct(options, struct_size, fit_defaults, "options"); });
}

dt_status dt_trainer_create(dt_trainer** out, dt_net* net, const dt_optimizer* opt, dt_kvstore* kv,
                            const dt_trainer_options* options) {
  return guarded(__func__, [&] {
    arg(out, "out");
    auto net_impl = handle(net, "net").impl;
    const auto& config = handle(opt, "opt").impl;
    std::shared_ptr<dt::kvstore::KVStore> store;
    if (kv != nullptr) store = handle(kv, "kv").impl;
    const dt_trainer_options o = dt::c_api::read_struct(options, trainer_defaults, "options");
    dt::train::TrainerOptions trainer_options;
    trainer_options.update_on_kvstore = o.update_on_kvstore;
    if (o.num_extra_contexts > 0) arg(o.extra_contexts, "options->extra_contexts");
    for (size_t i = 0; i < o.num_extra_contexts; ++i) {
      const std::string param = "options->extra_contexts[" + std::to_string(i) + "]";
      trainer_options.extra_contexts.push_back(handle(o.extra_contexts[i], param.c_str()).impl);
    }
    trainer_options.sync = sync_options(o);
    auto owned = std::make_unique<dt_trainer>();
    owned->impl = std::make_unique<dt::train::Trainer>(net_impl, config, store, std::move(trainer_options));
    *out = dt::c_api::adopt_handle(std::move(owned));
  });
}

void dt_trainer_free(dt_trainer* trainer) { dt::c_api::free_handle(trainer, __func__); }

dt_status dt_trainer_step(dt_trainer* trainer, int64_t batch_size) {
  return guarded(__func__, [&] { trainer_of(trainer).step(batch_size); });
}

dt_status dt_trainer_train_batch(double* out_loss, int64_t* out_correct, dt_trainer* trainer, const dt_ndarray* data,
                                 const dt_ndarray* labels) {
  return guarded(__func__, [&] {
    auto& t = trainer_of(trainer);
    const auto result = t.train_batch(handle(data, "data").impl, handle(labels, "labels").impl);
    if (out_loss != nullptr) *out_loss = result.loss;
    if (out_correct != nullptr) *out_correct = result.correct;
  });
}

dt_status dt_trainer_evaluate(double* out_accuracy, double* out_loss, dt_trainer* trainer, dt_data_loader* loader) {
  return guarded(__func__, [&] {
    auto& t = trainer_of(trainer);
    const auto result = t.evaluate(*handle(loader, "loader").impl);
    if (out_accuracy != nullptr) *out_accuracy = result.accuracy;
    if (out_loss != nullptr) *out_loss = result.loss;
  });
}

dt_status dt_trainer_set_learning_rate(dt_trainer* trainer, double lr) {
  return guarded(__func__, [&] { trainer_of(trainer).set_learning_rate(lr); });
}

dt_status dt_trainer_learning_rate(double* out, const dt_trainer* trainer) {
  return guarded(__func__, [&] {
    arg(out, "out");
    *out = handle(trainer, "trainer").impl->learning_rate();
  });
}

dt_status dt_trainer_save_checkpoint(const dt_trainer* trainer, const char* path) {
  return guarded(__func__, [&] {
    const auto& t = *handle(trainer, "trainer").impl;
    arg(path, "path");
    t.save_checkpoint(path);
  });
}

dt_status dt_trainer_load_checkpoint(dt_trainer* trainer, const char* path) {
  return guarded(__func__, [&] {
    auto& t = trainer_of(trainer);
    arg(path, "path");
    t.load_checkpoint(path);
  });
}

dt_status dt_trainer_fit(dt_trainer* trainer, dt_data_loader* train, dt_data_loader* test,
                         const dt_fit_options* options) {
  return guarded(__func__, [&] {
    auto& t = trainer_of(trainer);
    auto& train_loader = *handle(train, "train").impl;
    dt::data::BatchLoader* test_loader = test != nullptr ? handle(test, "test").impl.get() : nullptr;
    const dt_fit_options o = dt::c_api::read_struct(options, fit_defaults, "options");
    if (o.progress < -1 || o.progress > 2) throw Error(ErrorCode::kInvalidArgument, "options->progress must be -1..2");
    dt::train::FitOptions fit;
    fit.epochs = o.epochs;
    if (o.metrics_path != nullptr) fit.metrics_path = o.metrics_path;
    if (o.checkpoint_path != nullptr) fit.checkpoint_path = o.checkpoint_path;
    if (o.checkpoint_dir != nullptr) fit.checkpoint_dir = o.checkpoint_dir;
    fit.progress = static_cast<dt::train::ProgressMode>(o.progress);
    t.fit(train_loader, test_loader, fit);
  });
}

dt_status dt_trainer_epoch(int32_t* out, const dt_trainer* trainer) {
  return guarded(__func__, [&] {
    arg(out, "out");
    *out = handle(trainer, "trainer").impl->epoch();
  });
}

dt_status dt_trainer_steps(int64_t* out, const dt_trainer* trainer) {
  return guarded(__func__, [&] {
    arg(out, "out");
    *out = handle(trainer, "trainer").impl->steps();
  });
}

dt_status dt_trainer_admit_joining_workers(int32_t* out_admitted, dt_trainer* trainer) {
  return guarded(__func__, [&] {
    arg(out_admitted, "out_admitted");
    *out_admitted = trainer_of(trainer).admit_joining_workers() ? 1 : 0;
  });
}

dt_status dt_trainer_skipped_steps(int64_t* out, const dt_trainer* trainer) {
  return guarded(__func__, [&] {
    arg(out, "out");
    *out = handle(trainer, "trainer").impl->skipped_steps();
  });
}

}  // extern "C"
