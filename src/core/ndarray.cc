#include "core/ndarray.h"

#include <string>
#include <vector>

#include "core/copy.h"
#include "core/error.h"

namespace dt::core {

NDArray NDArray::allocate(std::shared_ptr<Context> ctx, DType dtype, const Shape& shape, bool zero) {
  if (!ctx) throw Error(ErrorCode::kInvalidArgument, "array needs a context");
  const size_t bytes = shape.nbytes(dtype_size(dtype));
  auto storage = std::make_shared<Storage>(std::move(ctx), bytes, zero);
  return NDArray(std::move(storage), 0, shape, dtype);
}

NDArray NDArray::empty(std::shared_ptr<Context> ctx, DType dtype, const Shape& shape) {
  return allocate(std::move(ctx), dtype, shape, false);
}

NDArray NDArray::zeros(std::shared_ptr<Context> ctx, DType dtype, const Shape& shape) {
  return allocate(std::move(ctx), dtype, shape, true);
}

NDArray NDArray::reshape(const Shape& shape) const {
  if (shape.numel() != shape_.numel()) {
    throw Error(ErrorCode::kShapeMismatch,
                "cannot reshape " + shape_.to_string() + " to " + shape.to_string() + ": element counts differ");
  }
  return NDArray(storage_, offset_, shape, dtype_);
}

NDArray NDArray::slice(int64_t begin, int64_t end) const {
  if (shape_.ndim() == 0) throw Error(ErrorCode::kInvalidArgument, "cannot slice a scalar (0-dim array)");
  const int64_t rows = shape_[0];
  if (begin < 0 || end < begin || end > rows) {
    throw Error(ErrorCode::kInvalidArgument, "slice [" + std::to_string(begin) + ", " + std::to_string(end) +
                                                 ") is outside [0, " + std::to_string(rows) + "]");
  }
  const size_t row_bytes = rows == 0 ? 0 : nbytes() / static_cast<size_t>(rows);
  return NDArray(storage_, offset_ + static_cast<size_t>(begin) * row_bytes, shape_.with_first_dim(end - begin),
                 dtype_);
}

void NDArray::copy_from_host(const void* src, size_t bytes) const {
  if (bytes != nbytes()) {
    throw Error(ErrorCode::kShapeMismatch, "got " + std::to_string(bytes) + " bytes for an array of " +
                                               std::to_string(nbytes()) + " bytes " + shape_.to_string() + " " +
                                               dtype_name(dtype_));
  }
  core::copy_from_host(*context(), data(), src, bytes);
}

void NDArray::copy_to_host(void* dst, size_t bytes) const {
  if (bytes != nbytes()) {
    throw Error(ErrorCode::kShapeMismatch, "buffer of " + std::to_string(bytes) + " bytes for an array of " +
                                               std::to_string(nbytes()) + " bytes " + shape_.to_string() + " " +
                                               dtype_name(dtype_));
  }
  core::copy_to_host(dst, *context(), data(), bytes);
}

void NDArray::copy_from(const NDArray& src) const {
  if (src.dtype_ != dtype_) {
    throw Error(ErrorCode::kDtypeMismatch,
                std::string("copy from ") + dtype_name(src.dtype_) + " to " + dtype_name(dtype_) + " (use cast)");
  }
  if (src.shape_ != shape_) {
    throw Error(ErrorCode::kShapeMismatch, "copy from " + src.shape_.to_string() + " to " + shape_.to_string());
  }
  copy_bytes(*context(), data(), *src.context(), src.data(), nbytes());
}

Shape infer_reshape(const int64_t* dims, size_t ndim, int64_t numel) {
  if (ndim > kMaxNDim) {
    throw Error(ErrorCode::kInvalidArgument, "ndim " + std::to_string(ndim) + " exceeds " + std::to_string(kMaxNDim));
  }
  if (ndim > 0 && dims == nullptr) throw Error(ErrorCode::kInvalidArgument, "dims is NULL but ndim > 0");
  std::vector<int64_t> resolved(dims, dims + ndim);
  int inferred = -1;
  for (size_t i = 0; i < ndim; ++i) {
    if (dims[i] == -1) {
      if (inferred >= 0) throw Error(ErrorCode::kInvalidArgument, "more than one -1 in reshape dims");
      inferred = static_cast<int>(i);
      resolved[i] = 1;
    } else if (dims[i] < 0) {
      throw Error(ErrorCode::kInvalidArgument, "reshape dim " + std::to_string(i) + " is " + std::to_string(dims[i]));
    }
  }
  const Shape known(resolved);
  if (inferred >= 0) {
    if (known.numel() == 0 || numel % known.numel() != 0) {
      throw Error(ErrorCode::kShapeMismatch, "cannot infer the -1 dim of " + known.to_string() + " for " +
                                                 std::to_string(numel) + " elements");
    }
    resolved[static_cast<size_t>(inferred)] = numel / known.numel();
  }
  Shape shape(resolved);
  if (shape.numel() != numel) {
    throw Error(ErrorCode::kShapeMismatch, "reshape to " + shape.to_string() + " (" + std::to_string(shape.numel()) +
                                               " elements) from " + std::to_string(numel) + " elements");
  }
  return shape;
}

}  // namespace dt::core
