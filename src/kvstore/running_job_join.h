// How a worker that the scheduler took into a running job in a lost one's
// place (DT_WORKER_LOSS=continue) takes its place in the servers' rounds: it
// asks every server the lowest round it may join at, and joins all of them
// at one round past the highest (the same round on every key, so its pushes
// stay in step with the others'); again when a part got past it meanwhile.
// Called once, by the store's constructor, before any other request.
#pragma once

#include <cstdint>

#include "kvstore/server_exchange.h"

namespace dt::kvstore {

// Returns the rounds the job completed before this worker joined: dist_sync
// rounds on every key go on from there; 0 for dist_async, whose pushes apply
// as they come. Throws the exchange's errors, or kBadState when the job kept
// getting past the round offered.
int64_t join_running_job(const ServerExchange& servers, int worker_rank, bool sync);

}  // namespace dt::kvstore
