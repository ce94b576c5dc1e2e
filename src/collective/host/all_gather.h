// Every rank's bytes, on every rank: what compressed all-reduces exchange
// (each rank's encoded gradient, whose size may differ from rank to rank, as
// top-k and threshold encodings do). Built on the communicator's own calls:
// one small all-reduce of the sizes (which carries tag, so ranks gathering
// different things fail with kProtocol), then one broadcast per rank.
// O(n) rounds: meant for the handful of workers of a CPU job.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "collective/host/host_communicator.h"

namespace dt::collective::host {

// result[r] = rank r's bytes. Errors as the communicator's calls.
std::vector<std::vector<uint8_t>> all_gather(HostCommunicator& comm, const void* data, size_t bytes,
                                             uint64_t tag = 0);

}  // namespace dt::collective::host
