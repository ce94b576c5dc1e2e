#include "collective/nccl/job_communicator.h"

#include <algorithm>
#include <string>
#include <vector>

#include "core/error.h"

namespace dt::collective::nccl {

using core::Error;
using core::ErrorCode;

std::unique_ptr<Communicator> join_job_communicator(int rank, int num_ranks, const Exchange& exchange, int device,
                                                    double timeout_s) {
  std::vector<uint8_t> mine;
  if (rank == 0) {
    const UniqueId id = new_unique_id();
    mine.assign(id.begin(), id.end());
  }
  const std::vector<std::vector<uint8_t>> all = exchange(mine);
  if (all.empty()) throw Error(ErrorCode::kProtocol, "the exchange of the NCCL unique id returned no rank's blob");
  const std::vector<uint8_t>& root = all.front();
  UniqueId id;
  if (root.size() != id.size()) {
    throw Error(ErrorCode::kProtocol, "NCCL unique id from worker 0 has " + std::to_string(root.size()) +
                                          " bytes, expected " + std::to_string(id.size()));
  }
  std::copy(root.begin(), root.end(), id.begin());
  return Communicator::create_rank(device, num_ranks, rank, id, timeout_s);
}

}  // namespace dt::collective::nccl
