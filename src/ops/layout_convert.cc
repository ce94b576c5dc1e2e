#include "ops/layout_convert.h"

#include <string>

#include "core/error.h"
#include "ops/cpu/layout_convert.h"
#include "ops/target.h"
#if DT_WITH_CUDA
#include "ops/cuda/layout_convert.h"
#endif

namespace dt::ops {

using core::Error;
using core::ErrorCode;

void convert_layout(const core::NDArray& dst, TensorLayout to, const core::NDArray& src, TensorLayout from) {
  const std::string op = std::string("convert_layout ") + layout_name(from) + " -> " + layout_name(to);
  if (!core::same_device(*dst.context(), *src.context())) {
    throw Error(ErrorCode::kInvalidArgument, op + ": arrays on " + src.context()->to_string() + " and " +
                                                 dst.context()->to_string() + " (copy first)");
  }
  if (dst.dtype() != src.dtype()) {
    throw Error(ErrorCode::kDtypeMismatch, op + ": dtypes " + core::dtype_name(src.dtype()) + " and " +
                                               core::dtype_name(dst.dtype()) + " differ");
  }
  if (src.shape().ndim() != 4) {
    throw Error(ErrorCode::kShapeMismatch, op + ": a 4-d source was expected, got " + src.shape().to_string());
  }
  const LogicalDims dims = logical_dims(from, src.shape());
  const core::Shape expected = layout_shape(to, dims.N, dims.C, dims.H, dims.W);
  if (dst.shape() != expected) {
    throw Error(ErrorCode::kShapeMismatch,
                op + ": destination must be " + expected.to_string() + ", got " + dst.shape().to_string());
  }
  if (src.size() == 0) return;
  convert_layout(*dst.context(), dst.data(), to, src.data(), from, dims, core::dtype_size(src.dtype()));
}

void convert_layout(const core::Context& ctx, void* dst, TensorLayout to, const void* src, TensorLayout from,
                    const LogicalDims& dims, size_t element_size) {
  if (ctx.is_cpu()) {
    cpu::convert_layout(dst, to, src, from, dims, element_size);
    return;
  }
#if DT_WITH_CUDA
  cuda::convert_layout(ctx, dst, to, src, from, dims, element_size);
#else
  detail::throw_no_cuda("convert_layout");
#endif
}

}  // namespace dt::ops
