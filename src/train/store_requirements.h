// What a trainer's options need of its kvstore, checked when a trainer is
// built (and the update side again when loss scaling moves it): each sync
// mode (train/sync_mode.h) — half and sparse set the store's gradient
// compression; partial needs a store that sums one push per worker across a
// job, without compressing and without going on after a worker loss, the
// update on the workers and one replica per worker — and an asynchronous
// store's update on the servers; whether the exchange may overlap backward.
// The training loop knows nothing of it.
//
// Threading: the trainer's thread.
#pragma once

#include "kvstore/kvstore.h"
#include "train/sync_mode.h"

namespace dt::train {

// Checks sync (already validated) against kv (null: none), the trainer's
// update_on_kvstore option (-1, 0, 1) and whether it has extra contexts,
// and sets the compression half and sparse need. Returns true when the mode
// updates on the workers whatever the option said (partial).
// Error(kInvalidArgument) or kNotSupported naming the mode otherwise.
bool configure_store_for_sync_mode(const SyncOptions& sync, kvstore::KVStore* kv, int update_on_kvstore,
                                   bool extra_contexts);

// Partial mode: Error(kInvalidArgument) when the store compresses, which
// would make the averaged weights lossy (the compression may be set after
// the trainer was built: checked again at the first step).
void refuse_compressed_weights(const kvstore::KVStore& kv);

// Scales kv's compression threshold for batch sums of 1/rescale samples
// (KVStore::set_compression_rescale_grad) when rescale differs from
// scaled_for, the rescale it was last scaled for, which it then becomes:
// the store's spec is parsed once per batch size, not at every step.
void scale_compression_threshold(kvstore::KVStore& kv, double rescale, double& scaled_for);

// Whether the exchange overlaps backward (dt_trainer_options.
// overlap_communication): 1 yes, 0 no, -1 DT_KVSTORE_OVERLAP (0 or 1,
// default 1). Error(kInvalidArgument) for any other value.
bool overlap_wanted(int overlap_communication);

// Error(kInvalidArgument) for an asynchronous store (dist_async*) with the
// update on the workers: Gluon refuses it too.
void refuse_async_updates_on_workers(const kvstore::KVStore* kv, bool update_on_kvstore);

}  // namespace dt::train
