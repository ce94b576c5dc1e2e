#include "train/join_hand_over.h"

#include <algorithm>
#include <string>

#include "core/log.h"

namespace dt::train {

using core::Error;
using core::ErrorCode;

Error joined_job_refusal() {
  return Error(ErrorCode::kNotSupported,
               "trainer: this worker joined a running job, whose weights and optimizer state only the servers hold "
               "when they run the optimizer (update_on_kvstore); this trainer updates on the workers");
}

bool joined_running_job(const kvstore::KVStore* kv) {
  const kvstore::Elastic* elastic = kv ? kv->elastic() : nullptr;
  return elastic && elastic->joined_running_job();
}

std::vector<uint8_t> take_handed_over_state(kvstore::KVStore& kv) {
  kvstore::Elastic* elastic = kv.elastic();
  if (!elastic) throw joined_job_refusal();
  try {
    return elastic->hand_over_state({});
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kNotSupported) throw;
    throw joined_job_refusal();
  }
}

int64_t join_at_handed_state(int epoch, int64_t steps, int64_t batches_per_epoch) {
  // The job's step is the one the state was taken before.
  const int64_t into_epoch =
      batches_per_epoch <= 0
          ? 0
          : std::clamp<int64_t>(steps - static_cast<int64_t>(epoch) * batches_per_epoch, 0, batches_per_epoch);
  const std::string where = batches_per_epoch <= 0 ? std::string()
                                                   : "epoch " + std::to_string(epoch + 1) + ", batch " +
                                                         std::to_string(into_epoch + 1) + " ";
  core::logf(core::LogLevel::kInfo, "trainer",
             "joined the running job at %s(step %lld), with the weights and optimizer state the workers in it "
             "handed over",
             where.c_str(), static_cast<long long>(steps + 1));
  return into_epoch;
}

int64_t join_at_servers_round(const kvstore::KVStore& kv, int64_t batches_per_epoch, int& epoch, int64_t& steps) {
  const kvstore::Elastic* elastic = kv.elastic();
  const int64_t done = elastic ? elastic->rounds_before_joining() : 0;
  if (batches_per_epoch <= 0) return 0;
  epoch = static_cast<int>(done / batches_per_epoch);
  steps = done;
  core::logf(core::LogLevel::kInfo, "trainer", "joined the running job at epoch %d, batch %lld (step %lld)",
             epoch + 1, static_cast<long long>(done % batches_per_epoch + 1), static_cast<long long>(done + 1));
  return done % batches_per_epoch;
}

}  // namespace dt::train
