// Every rank's bytes, on every rank, over an NCCL communicator: what the
// compressed all-reduce of "dist_nccl" exchanges (each worker's encoded
// gradient, whose size differs from rank to rank, as top-k and threshold
// encodings do). ncclAllGather moves the same count from every rank, so
// this takes two: one of (size, tag) per rank, then one of every rank's
// bytes padded to the largest size; the host cuts each rank's bytes out of
// the padded result. Both go through device memory, since NCCL moves
// nothing else.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "collective/nccl/communicator.h"
#include "core/context.h"

namespace dt::collective::nccl {

// result[r] = rank r's bytes, data[0, bytes) being this rank's. gpu is the
// context of comm's device: its stream carries the copies and collectives,
// its allocator the device buffers. Every rank passes the same tag; a rank
// that gathers under another tag, or sends more than limit bytes, is
// Error(kProtocol) naming it on every rank (all see the same sizes and
// tags), before anything that large is allocated. Each of the two
// collectives waits at most timeout_s (Communicator::synchronize:
// kTimedOut, or kNccl when a peer failed; the communicator is aborted).
std::vector<std::vector<uint8_t>> all_gather_bytes(Communicator& comm, const std::shared_ptr<core::Context>& gpu,
                                                   const void* data, size_t bytes, uint64_t tag, size_t limit,
                                                   double timeout_s);

}  // namespace dt::collective::nccl
