// Named arrays in the safetensors format (https://github.com/huggingface/safetensors):
// an 8-byte little-endian header length N, N bytes of JSON
// {"name": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, ...,
//  "__metadata__": {"k": "v"}}, then the raw little-endian tensor bytes.
// Files written here are readable by PyTorch, JAX and MXNet users' tools.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/ndarray.h"

namespace dt::core {

using NamedArrays = std::vector<std::pair<std::string, NDArray>>;

struct SafetensorsContents {
  NamedArrays arrays;  // in the header's order
  std::map<std::string, std::string> metadata;
};

// Writes arrays (names unique and non-empty; Error(kInvalidArgument)
// otherwise) with optional string metadata. The bytes go to a temporary
// file in the same directory that is fsync'ed and renamed over `path`, so a
// crash or a full disk never leaves a half-written checkpoint; failures are
// Error(kIo) naming the path and the system's reason.
void save_safetensors(const std::string& path, const NamedArrays& arrays,
                      const std::map<std::string, std::string>& metadata = {});

// Reads and validates a whole file onto ctx: header length within the file
// and below 100 MB, well-formed JSON, known dtypes, offsets that match the
// shapes and tile the data block exactly. Error(kNotFound) for a missing
// file, Error(kIo) naming the defect otherwise.
SafetensorsContents load_safetensors(const std::string& path, const std::shared_ptr<Context>& ctx);

// The same format in memory, for state that travels instead of being kept
// (a trainer handing its state to a worker that joined): the bytes
// save_safetensors would write, and the checks of load_safetensors on
// bytes, whose defects are Error(kIo) naming `what`.
std::vector<uint8_t> safetensors_bytes(const NamedArrays& arrays,
                                       const std::map<std::string, std::string>& metadata = {});
SafetensorsContents parse_safetensors(const std::vector<uint8_t>& bytes, const std::shared_ptr<Context>& ctx,
                                      const std::string& what);

}  // namespace dt::core
