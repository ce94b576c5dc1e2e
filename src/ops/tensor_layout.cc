#include "ops/tensor_layout.h"

#include "core/error.h"

namespace dt::ops {

const char* layout_name(TensorLayout layout) { return layout == TensorLayout::kNCHW ? "NCHW" : "NHWC"; }

TensorLayout parse_layout(const std::string& text, const std::string& what) {
  if (text == "NCHW") return TensorLayout::kNCHW;
  if (text == "NHWC") return TensorLayout::kNHWC;
  throw core::Error(core::ErrorCode::kInvalidArgument,
                    what + ": layout must be \"NCHW\" or \"NHWC\", got \"" + text + "\"");
}

core::Shape layout_shape(TensorLayout layout, int64_t N, int64_t C, int64_t H, int64_t W) {
  return layout == TensorLayout::kNCHW ? core::Shape({N, C, H, W}) : core::Shape({N, H, W, C});
}

LogicalDims logical_dims(TensorLayout layout, const core::Shape& s) {
  if (s.ndim() != 4) {
    throw core::Error(core::ErrorCode::kShapeMismatch,
                      std::string("a 4-d array in ") + layout_name(layout) + " was expected, got " + s.to_string());
  }
  return layout == TensorLayout::kNCHW ? LogicalDims{s[0], s[1], s[2], s[3]} : LogicalDims{s[0], s[3], s[1], s[2]};
}

}  // namespace dt::ops
