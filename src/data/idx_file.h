// Reader for the IDX format that MNIST and its descendants (Fashion-MNIST,
// KMNIST, EMNIST) ship in: two zero bytes, a type byte, a dims byte, the dims
// as big-endian uint32, then the elements in row-major order, big-endian.
#pragma once

#include <string>

#include "core/ndarray.h"

namespace dt::data {

// Reads a whole IDX file, plain or gzip-compressed; the two are told apart by
// the gzip magic bytes 1f 8b, not by the file name, so a renamed file still
// reads. The result lives on a CPU context and has the file's dims as shape.
//
// Element types: 0x08 uint8 -> kUInt8, 0x0C int32 -> kInt32, 0x0D float32 ->
// kFloat32, 0x0E float64 -> kFloat64. 0x09 int8 and 0x0B int16 have no DType
// of their own and are widened to kInt32, which holds every value exactly.
//
// Every error names the file: Error(kNotFound) when it does not exist;
// Error(kIo) for an unreadable file, a corrupt gzip stream, a bad magic, an
// unknown type byte, zero dims or more than core::kMaxNDim, dims whose byte
// count overflows, fewer data bytes than the dims promise (truncated) or more
// (trailing bytes).
core::NDArray read_idx(const std::string& path);

}  // namespace dt::data
