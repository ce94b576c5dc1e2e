// One GPU per rank, checked before a GPU collective is set up: NCCL refuses
// two ranks on one GPU, with an error that names neither rank. Each rank
// says where it runs (its host and device) in the setup's exchange, and
// every rank checks the whole list the same way, so all of them fail with
// the same message naming both ranks.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dt::collective {

struct GpuPlace {
  std::string host;  // gethostname() of the rank's process
  int device = 0;    // its CUDA device ordinal
};

// The place of this process on `device`.
GpuPlace this_gpu_place(int device);

// Bytes for the exchange: [int32 device, little-endian][host name]. Binary,
// not text: the exchange is between ranks of one build, and the decoder
// checks the size. decode: Error(kProtocol) naming `rank` when malformed.
std::vector<uint8_t> encode_gpu_place(const GpuPlace& place);
GpuPlace decode_gpu_place(const uint8_t* data, size_t size, int rank);

// Error(kInvalidArgument) naming the first two ranks (index = rank) that
// would share a GPU, and the GPU.
void check_one_gpu_per_rank(const std::vector<GpuPlace>& places);

}  // namespace dt::collective
