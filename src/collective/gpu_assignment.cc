#include "collective/gpu_assignment.h"

#include <unistd.h>

#include <map>
#include <utility>

#include "core/error.h"

namespace dt::collective {

using core::Error;
using core::ErrorCode;

GpuPlace this_gpu_place(int device) {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) name[0] = '\0';
  return GpuPlace{name, device};
}

std::vector<uint8_t> encode_gpu_place(const GpuPlace& place) {
  std::vector<uint8_t> bytes(4);
  const auto device = static_cast<uint32_t>(place.device);
  for (int i = 0; i < 4; ++i) bytes[i] = static_cast<uint8_t>(device >> (8 * i));
  bytes.insert(bytes.end(), place.host.begin(), place.host.end());
  return bytes;
}

GpuPlace decode_gpu_place(const uint8_t* data, size_t size, int rank) {
  if (size < 4) {
    throw Error(ErrorCode::kProtocol, "rank " + std::to_string(rank) + " sent a GPU place of " + std::to_string(size) +
                                          " bytes, fewer than its device's 4");
  }
  uint32_t device = 0;
  for (int i = 0; i < 4; ++i) device |= static_cast<uint32_t>(data[i]) << (8 * i);
  if (device > 65535) {
    throw Error(ErrorCode::kProtocol, "rank " + std::to_string(rank) + " sent GPU " + std::to_string(device) +
                                          ", which is no device ordinal");
  }
  return GpuPlace{std::string(reinterpret_cast<const char*>(data) + 4, size - 4), static_cast<int>(device)};
}

void check_one_gpu_per_rank(const std::vector<GpuPlace>& places) {
  std::map<std::pair<std::string, int>, size_t> first;
  for (size_t rank = 0; rank < places.size(); ++rank) {
    const auto [it, fresh] = first.emplace(std::make_pair(places[rank].host, places[rank].device), rank);
    if (fresh) continue;
    throw Error(ErrorCode::kInvalidArgument,
                "workers " + std::to_string(it->second) + " and " + std::to_string(rank) + " would share GPU " +
                    std::to_string(places[rank].device) + " on host " + places[rank].host +
                    ": dist_nccl takes one GPU per worker (NCCL refuses two ranks on one GPU); start at most one "
                    "worker per GPU on each host (dtrun sets DT_LOCAL_RANK, the GPU each worker takes)");
  }
}

}  // namespace dt::collective
