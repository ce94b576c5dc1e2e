// A trainer's side of joining a running job (DT_WORKER_LOSS=continue, a
// worker started again in a departed one's place; kvstore/elastic.h): where
// the joined worker goes on, and the state it takes. The trainer (trainer.h)
// calls these from its one hook, before the first batch a joined worker
// trains; the training loop knows nothing of them.
//  - In an all-reduce job the workers hold the weights: they hand the
//    joined one the trainer's checkpoint as bytes (train/trainer_checkpoint.h),
//    and it goes on from the step they had reached.
//  - In a parameter-server job with the update on the servers, the joined
//    worker takes the servers' weights and the round they reached.
// Each joined worker says where it went on, on the log ("trainer").
//
// Threading: the trainer's thread.
#pragma once

#include <cstdint>
#include <vector>

#include "core/error.h"
#include "kvstore/kvstore.h"

namespace dt::train {

// Error(kNotSupported): a joined worker whose trainer updates on the
// workers, in a job whose weights and optimizer state only the servers hold.
core::Error joined_job_refusal();

// Whether this worker joined a running job through kv (null: none); a store
// without an elastic facet joins nobody.
bool joined_running_job(const kvstore::KVStore* kv);

// The state the workers of an all-reduce job hand a joined one (the elastic
// facet's hand_over_state); joined_job_refusal() for a store that hands over
// none.
std::vector<uint8_t> take_handed_over_state(kvstore::KVStore& kv);

// After the handed-over state (its epoch and steps) was loaded: how many
// batches of that epoch the job trained already (0 for a loop of one's own,
// batches_per_epoch <= 0, which has no epoch length to tell).
int64_t join_at_handed_state(int epoch, int64_t steps, int64_t batches_per_epoch);

// With the servers' weights: moves epoch and steps to the round the job
// reached and returns how many batches of that epoch it trained already
// (0, with epoch and steps unchanged, when batches_per_epoch <= 0).
int64_t join_at_servers_round(const kvstore::KVStore& kv, int64_t batches_per_epoch, int& epoch, int64_t& steps);

}  // namespace dt::train
