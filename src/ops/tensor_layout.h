// The memory order of a 4-d activation, NCHW or NHWC (ops/layout_index.h
// holds the enum and the index functions host loops and CUDA kernels share),
// and what only the host needs of it: names, parsing, array shapes.
#pragma once

#include <cstdint>
#include <string>

#include "core/shape.h"
#include "ops/layout_index.h"

namespace dt::ops {

// "NCHW" / "NHWC", MXNet's spelling of its `layout` attribute.
const char* layout_name(TensorLayout layout);
// The layout named by text (exactly "NCHW" or "NHWC");
// Error(kInvalidArgument) naming `what` and the accepted values otherwise.
TensorLayout parse_layout(const std::string& text, const std::string& what);

// The array shape of logical (N, C, H, W) in `layout`: (N, C, H, W) or (N, H, W, C).
core::Shape layout_shape(TensorLayout layout, int64_t N, int64_t C, int64_t H, int64_t W);
// The logical dims of a 4-d array shape in `layout` (Error(kShapeMismatch)
// for another rank).
struct LogicalDims {
  int64_t N, C, H, W;
};
LogicalDims logical_dims(TensorLayout layout, const core::Shape& shape);

}  // namespace dt::ops
