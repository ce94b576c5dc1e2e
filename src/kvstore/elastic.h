// A kvstore's elastic facet: what a store offers, beyond kvstore.h's plain
// interface, when its job goes on after losing a worker and lets a worker
// started again in a departed one's place join the running job
// (DT_WORKER_LOSS=continue; docs/fault-tolerance.md).
// KVStore::elastic() returns it, or null for the stores that span no such
// job (local, device, nccl, dist_nccl). Callers read null as "nobody joins
// and no loss is survived": not joined, no rounds before joining, no going
// on after a loss, nobody admitted, and a hand-over refused with
// no_hand_over().
// The facet is the store itself, seen through this interface: it lives as
// long as the store, and its threading is the store's.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"

namespace dt::kvstore {

class Elastic {
 public:
  Elastic(const Elastic&) = delete;
  Elastic& operator=(const Elastic&) = delete;

  // Whether this worker joined a running job in the place of one the job
  // lost, and how many dist_sync rounds the job had done on every key before
  // its first push: its pushes count from round rounds_before_joining() + 1.
  // A trainer goes on from that step instead of starting over.
  virtual bool joined_running_job() const = 0;
  virtual int64_t rounds_before_joining() const = 0;
  // Whether the job goes on when it loses a worker (DT_WORKER_LOSS=continue):
  // its sums then count fewer workers than num_workers().
  virtual bool goes_on_after_worker_loss() const = 0;
  // Workers joining a job without servers (the "allreduce" store): the
  // workers in the job hold the weights, so they let a joined worker in at a
  // step they agree on and hand it their state. Every worker in the job
  // calls admit_joining_workers() at the same point (the trainer: before
  // each batch; one small all-reduce); it returns true, alike on every one
  // of them, when joined workers were let in just now. Then each of them
  // calls hand_over_state(its state), which returns nothing there, and a
  // joined worker calls it once, first: it returns the state of the first
  // worker that was in the job before. Every state may differ in size. A
  // joined worker's init() keeps its own values (it has nobody to take them
  // from before the hand-over). Stores whose servers hold the job's state
  // let nobody in this way: false, and hand_over_state is no_hand_over().
  virtual bool admit_joining_workers() = 0;
  virtual std::vector<uint8_t> hand_over_state(const std::vector<uint8_t>& state) = 0;

 protected:
  Elastic() = default;
  // Not deleted through the facet: the store owns it.
  virtual ~Elastic() = default;
};

// Error(kNotSupported): kvstore `type` hands no state to joining workers.
core::Error no_hand_over(const std::string& type);

}  // namespace dt::kvstore
