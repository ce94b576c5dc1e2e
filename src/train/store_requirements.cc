#include "train/store_requirements.h"

#include <string>

#include "core/error.h"
#include "core/parameter_table.h"

namespace dt::train {

using core::Error;
using core::ErrorCode;

bool configure_store_for_sync_mode(const SyncOptions& sync, kvstore::KVStore* kv, int update_on_kvstore,
                                   bool extra_contexts) {
  const std::string mode = std::string("trainer: sync mode ") + sync_mode_name(sync.mode);
  switch (sync.mode) {
    case SyncMode::kFull:
      return false;
    case SyncMode::kHalf:
    case SyncMode::kSparse: {
      if (!kv) {
        throw Error(ErrorCode::kInvalidArgument, mode + " compresses what the workers send through a distributed "
                                                 "kvstore (a parameter-server type or \"allreduce\"); there is none");
      }
      const std::string wanted = sync.compression_spec();
      const std::string current = kv->gradient_compression();
      if (current == wanted) return false;
      if (current != "none") {
        throw Error(ErrorCode::kInvalidArgument,
                    mode + " sets the kvstore's gradient compression to '" + wanted + "', but the store already " +
                        "compresses with '" + current + "': set one of the two, not both");
      }
      try {
        kv->set_gradient_compression(wanted);
      } catch (const Error& e) {
        throw Error(e.code(), mode + ": " + e.what());
      }
      return false;
    }
    case SyncMode::kPartial: {
      if (!kv) {
        throw Error(ErrorCode::kInvalidArgument, mode + " averages weights across the workers of a distributed "
                                                 "kvstore (\"allreduce\", \"dist_sync\", ...); there is none");
      }
      const std::string type = kv->type();
      if (type == "dist_async" || type == "dist_async_device") {
        throw Error(ErrorCode::kNotSupported,
                    mode + " needs a store that sums one push per worker into a round: dist_async servers apply "
                           "each push on its own, so no average exists there; use dist_sync or allreduce");
      }
      if (type != "allreduce" && type != "dist_nccl" && type != "dist_sync" && type != "dist_sync_device") {
        throw Error(ErrorCode::kNotSupported, mode + " averages across the workers of a job, which kvstore '" + type +
                                                  "' does not span; use allreduce, dist_nccl, dist_sync or "
                                                  "dist_sync_device");
      }
      if (const kvstore::Elastic* elastic = kv->elastic(); elastic && elastic->goes_on_after_worker_loss()) {
        // The average divides by the job's workers; after a loss the sum
        // holds fewer, and a step a loss interrupted may hold either.
        throw Error(ErrorCode::kNotSupported,
                    mode + " averages weights over the job's " + std::to_string(kv->num_workers()) +
                        " workers, and a job that goes on after a worker loss (DT_WORKER_LOSS=continue) sums fewer "
                        "after one: not supported together (not built); use sync mode full or half");
      }
      if (update_on_kvstore == 1) {
        throw Error(ErrorCode::kInvalidArgument, mode + " updates every worker with its own gradients: "
                                                 "update_on_kvstore must be 0 or -1, not 1");
      }
      if (extra_contexts) {
        throw Error(ErrorCode::kNotSupported, mode + " trains one replica per worker; extra contexts are not "
                                                 "supported with it");
      }
      refuse_compressed_weights(*kv);
      return true;
    }
  }
  return false;
}

void refuse_compressed_weights(const kvstore::KVStore& kv) {
  const std::string current = kv.gradient_compression();
  if (current != "none") {
    throw Error(ErrorCode::kInvalidArgument,
                "trainer: sync mode partial averages weights through the kvstore, which compresses with '" + current +
                    "': the weights would be lossy; leave the store's gradient compression unset");
  }
}

void refuse_async_updates_on_workers(const kvstore::KVStore* kv, bool update_on_kvstore) {
  // Gluon's rule: workers that each apply their own gradients to weights
  // pulled at different moments drift apart; only the servers can apply
  // asynchronous pushes to one model.
  if (kv && !update_on_kvstore && kv->type().find("async") != std::string::npos) {
    throw Error(ErrorCode::kInvalidArgument,
                "trainer: kvstore '" + kv->type() + "' needs the update on the servers (update_on_kvstore = 1 or "
                "-1, and no dynamic loss scaling); as MXNet says, \"Please set update_on_kvstore=True when "
                "training in async mode.\"");
  }
}

bool overlap_wanted(int overlap_communication) {
  if (overlap_communication < -1 || overlap_communication > 1) {
    throw Error(ErrorCode::kInvalidArgument, "overlap_communication must be -1, 0 or 1");
  }
  if (overlap_communication != -1) return overlap_communication == 1;
  const char* env = core::read_parameter("DT_KVSTORE_OVERLAP");
  const std::string text = env ? env : "1";
  if (text != "0" && text != "1") {
    throw Error(ErrorCode::kInvalidArgument, "DT_KVSTORE_OVERLAP must be 0 or 1, not '" + text + "'");
  }
  return text == "1";
}

void scale_compression_threshold(kvstore::KVStore& kv, double rescale, double& scaled_for) {
  if (rescale == scaled_for) return;
  kv.set_compression_rescale_grad(rescale);
  scaled_for = rescale;
}

}  // namespace dt::train
