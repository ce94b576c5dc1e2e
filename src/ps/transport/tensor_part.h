// Which part of which tensor a data-plane slice is about: a key's elements
// [begin, end) of a tensor of a given dtype and full shape. What the wire's
// TensorSlice says (ps/transport/protocol.fbs), as a plain value shared by
// the codec (data_codec.h) and the servers' store (ps/server/key_store.h).
#pragma once

#include <cstdint>

#include "core/dtype.h"
#include "core/shape.h"

namespace dt::ps {

// Identifies one stored part: a key's elements [begin, end).
struct PartKey {
  uint64_t key = 0;
  int64_t begin = 0;
  int64_t end = 0;
};

// What a slice says about the tensor it belongs to.
struct PartInfo {
  PartKey part;
  core::DType dtype = core::DType::kFloat32;
  core::Shape shape;  // the full tensor's shape
};

}  // namespace dt::ps
