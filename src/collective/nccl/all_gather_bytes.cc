#include "collective/nccl/all_gather_bytes.h"

#include <algorithm>
#include <cstddef>
#include <string>

#include "core/copy.h"
#include "core/cuda/gpu_context.h"
#include "core/error.h"
#include "core/ndarray.h"

namespace dt::collective::nccl {

using core::DType;
using core::Error;
using core::ErrorCode;
using core::NDArray;
using core::Shape;

std::vector<std::vector<uint8_t>> all_gather_bytes(Communicator& comm, const std::shared_ptr<core::Context>& gpu,
                                                   const void* data, size_t bytes, uint64_t tag, size_t limit,
                                                   double timeout_s) {
  const size_t ranks = static_cast<size_t>(comm.size());
  const size_t me = static_cast<size_t>(comm.rank());
  const cudaStream_t stream = core::cuda::stream_of(*gpu);

  // (size, tag) of every rank: two 64-bit words each, gathered in place.
  NDArray headers = NDArray::empty(gpu, DType::kInt64, Shape({static_cast<int64_t>(ranks), 2}));
  const uint64_t mine[2] = {bytes, tag};
  headers.slice(static_cast<int64_t>(me), static_cast<int64_t>(me) + 1).copy_from_host(mine, sizeof mine);
  int64_t* const header_words = headers.data_as<int64_t>();
  comm.all_gather(header_words + 2 * me, header_words, 2, DType::kInt64, stream);
  comm.synchronize(stream, timeout_s);
  std::vector<uint64_t> all(2 * ranks);
  headers.copy_to_host(all.data(), all.size() * sizeof(uint64_t));

  size_t widest = 0;
  for (size_t r = 0; r < ranks; ++r) {
    const uint64_t size = all[2 * r], theirs = all[2 * r + 1];
    if (theirs != tag) {
      throw Error(ErrorCode::kProtocol, "NCCL all-gather: rank " + std::to_string(r) + " gathers under tag " +
                                            std::to_string(theirs) + ", rank " + std::to_string(me) + " under " +
                                            std::to_string(tag) + " (the ranks are not at the same exchange)");
    }
    if (size > limit) {
      throw Error(ErrorCode::kProtocol, "NCCL all-gather under tag " + std::to_string(tag) + ": rank " +
                                            std::to_string(r) + " sends " + std::to_string(size) +
                                            " bytes, more than the " + std::to_string(limit) + " expected");
    }
    widest = std::max(widest, static_cast<size_t>(size));
  }
  std::vector<std::vector<uint8_t>> result(ranks);
  if (widest == 0) return result;

  // Every rank's bytes in a row of widest bytes, this rank's gathered in place.
  NDArray padded =
      NDArray::empty(gpu, DType::kUInt8, Shape({static_cast<int64_t>(ranks), static_cast<int64_t>(widest)}));
  uint8_t* const rows = padded.data_as<uint8_t>();
  core::copy_from_host(*gpu, rows + me * widest, data, bytes);
  comm.all_gather(rows + me * widest, rows, widest, DType::kUInt8, stream);
  comm.synchronize(stream, timeout_s);
  std::vector<uint8_t> host(ranks * widest);
  padded.copy_to_host(host.data(), host.size());
  for (size_t r = 0; r < ranks; ++r) {
    const auto row = host.begin() + static_cast<std::ptrdiff_t>(r * widest);
    result[r].assign(row, row + static_cast<std::ptrdiff_t>(all[2 * r]));
  }
  return result;
}

}  // namespace dt::collective::nccl
