#include "collective/host/all_gather.h"

#include <cstring>

#include "core/error.h"

namespace dt::collective::host {

std::vector<std::vector<uint8_t>> all_gather(HostCommunicator& comm, const void* data, size_t bytes, uint64_t tag) {
  if (bytes > 0 && data == nullptr) {
    throw core::Error(core::ErrorCode::kInvalidArgument, "all_gather: null data");
  }
  const int n = comm.size();
  // Each rank fills its own slot; the sum is every rank's size.
  std::vector<int64_t> sizes(static_cast<size_t>(n), 0);
  sizes[static_cast<size_t>(comm.rank())] = static_cast<int64_t>(bytes);
  comm.all_reduce_sum(sizes.data(), sizes.size(), core::DType::kInt64, tag);
  std::vector<std::vector<uint8_t>> out(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) {
    if (sizes[static_cast<size_t>(r)] < 0) {
      throw core::Error(core::ErrorCode::kProtocol, "all_gather: rank " + std::to_string(r) + " sent a negative size");
    }
    std::vector<uint8_t>& block = out[static_cast<size_t>(r)];
    block.resize(static_cast<size_t>(sizes[static_cast<size_t>(r)]));
    if (r == comm.rank() && bytes > 0) std::memcpy(block.data(), data, bytes);
    comm.broadcast(block.data(), block.size(), r);
  }
  return out;
}

}  // namespace dt::collective::host
