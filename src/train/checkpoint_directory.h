// A job's checkpoints in one directory, so that a stopped job restarts from
// the last epoch every worker finished (issue 19, item 4):
//  - after each epoch every worker writes its trainer checkpoint to
//    epoch-<E>/worker-<R>.safetensors (itself written to a temporary name
//    and renamed, core/safetensors.h);
//  - the workers meet at a kvstore barrier, so all of epoch E's files exist
//    (every worker's still in the job: under DT_WORKER_LOSS=continue one it
//    went on without wrote none, and resumes from another's);
//  - worker 0 then replaces MANIFEST.json, again by a rename, naming E and
//    the number of workers, and removes the epoch directories before E.
// A restart reads the manifest and loads its epoch. A job killed while an
// epoch's files were being written still has the manifest on the previous
// epoch, whose files are complete.
//
// The servers write nothing: their state (the optimizer's, when it runs
// there) is pulled into the workers' checkpoints (Trainer::save_checkpoint)
// and pushed back to them when a resumed trainer first initialises the
// store, which is why a dist_sync job resumes bit for bit.
#pragma once

#include <optional>
#include <string>

#include "kvstore/kvstore.h"

namespace dt::train {

class CheckpointDirectory {
 public:
  // Creates path (and its parents) when missing; Error(kIo) when it cannot,
  // kInvalidArgument for an empty path or a rank outside [0, num_workers).
  CheckpointDirectory(std::string path, int rank, int num_workers);

  const std::string& path() const { return path_; }
  // This worker's checkpoint of epoch (creating the epoch's directory).
  std::string worker_file(int epoch) const;
  // The checkpoint this worker resumes epoch from: its own, or, when the
  // job went on without it in that epoch (DT_WORKER_LOSS=continue) and it
  // wrote none, the lowest-ranked worker's (every worker's holds the same
  // weights, optimizer state and step). Error(kNotFound) when there is none.
  std::string resume_file(int epoch) const;
  // After this worker wrote worker_file(epoch): waits for the others
  // (kv->barrier(); kv may be null for a single worker), then worker 0
  // records the epoch in the manifest and removes older epochs.
  void commit(int epoch, kvstore::KVStore* kv) const;
  // The manifest's epoch; nullopt without a manifest. Error(kIo) naming the
  // file for one that is malformed, kInvalidArgument for one written by a
  // job with another number of workers (its files would not match the
  // workers' ranks).
  std::optional<int> last_complete_epoch() const;

 private:
  std::string epoch_dir(int epoch) const;
  std::string manifest() const;

  std::string path_;
  int rank_;
  int num_workers_;
};

}  // namespace dt::train
