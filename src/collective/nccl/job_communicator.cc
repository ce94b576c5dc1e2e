#include "collective/nccl/job_communicator.h"

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

#include "collective/gpu_assignment.h"
#include "core/error.h"

namespace dt::collective::nccl {

using core::Error;
using core::ErrorCode;

std::unique_ptr<Communicator> join_job_communicator(int rank, int num_ranks, const Exchange& exchange, int device,
                                                    double timeout_s) {
  // Each rank's blob: worker 0's starts with the unique id; then every
  // rank's GPU place, so that two ranks on one GPU are named before NCCL
  // refuses them.
  UniqueId id;
  std::vector<uint8_t> mine;
  if (rank == 0) {
    id = new_unique_id();
    mine.assign(id.begin(), id.end());
  }
  const std::vector<uint8_t> place = encode_gpu_place(this_gpu_place(device));
  mine.insert(mine.end(), place.begin(), place.end());
  const std::vector<std::vector<uint8_t>> all = exchange(mine);
  if (all.size() != static_cast<size_t>(num_ranks)) {
    throw Error(ErrorCode::kProtocol, "the exchange of the NCCL unique id returned " + std::to_string(all.size()) +
                                          " ranks' blobs, expected " + std::to_string(num_ranks));
  }
  const std::vector<uint8_t>& root = all.front();
  if (root.size() < id.size()) {
    throw Error(ErrorCode::kProtocol, "NCCL unique id from worker 0 has " + std::to_string(root.size()) +
                                          " bytes, expected at least " + std::to_string(id.size()));
  }
  std::copy(root.begin(), root.begin() + static_cast<std::ptrdiff_t>(id.size()), id.begin());
  std::vector<GpuPlace> places;
  for (size_t r = 0; r < all.size(); ++r) {
    const size_t skip = r == 0 ? id.size() : 0;
    places.push_back(decode_gpu_place(all[r].data() + skip, all[r].size() - skip, static_cast<int>(r)));
  }
  check_one_gpu_per_rank(places);
  return Communicator::create_rank(device, num_ranks, rank, id, timeout_s);
}

}  // namespace dt::collective::nccl
