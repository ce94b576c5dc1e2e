#include "core/shape.h"

#include <cstdint>
#include <limits>

#include "core/error.h"

namespace dt::core {

Shape::Shape(const int64_t* dims, size_t ndim) {
  if (ndim > kMaxNDim) {
    throw Error(ErrorCode::kInvalidArgument,
                "ndim " + std::to_string(ndim) + " exceeds the maximum of " + std::to_string(kMaxNDim));
  }
  if (ndim > 0 && dims == nullptr) throw Error(ErrorCode::kInvalidArgument, "dims is NULL but ndim > 0");
  ndim_ = ndim;
  // The product of the non-zero dims is checked for overflow on its own: a
  // zero dim makes the count zero, but {0, INT64_MAX, 2} is still a caller bug.
  int64_t nonzero_product = 1;
  bool has_zero = false;
  for (size_t i = 0; i < ndim; ++i) {
    if (dims[i] < 0) {
      throw Error(ErrorCode::kInvalidArgument,
                  "dim " + std::to_string(i) + " is negative (" + std::to_string(dims[i]) + ")");
    }
    dims_[i] = dims[i];
    if (dims[i] == 0) {
      has_zero = true;
    } else if (nonzero_product > std::numeric_limits<int64_t>::max() / dims[i]) {
      throw Error(ErrorCode::kInvalidArgument, "element count of shape " + to_string() + " overflows");
    } else {
      nonzero_product *= dims[i];
    }
  }
  const int64_t count = has_zero ? 0 : nonzero_product;
  numel_ = count;
}

Shape::Shape(std::initializer_list<int64_t> dims) : Shape(dims.begin(), dims.size()) {}

Shape::Shape(const std::vector<int64_t>& dims) : Shape(dims.data(), dims.size()) {}

size_t Shape::nbytes(size_t element_size) const {
  const auto limit = static_cast<uint64_t>(std::numeric_limits<std::ptrdiff_t>::max());
  const auto count = static_cast<uint64_t>(numel_);
  if (element_size != 0 && count > limit / element_size) {
    throw Error(ErrorCode::kInvalidArgument, "byte size of shape " + to_string() + " overflows");
  }
  return static_cast<size_t>(count * element_size);
}

Shape Shape::with_first_dim(int64_t first) const {
  std::array<int64_t, kMaxNDim> dims = dims_;
  dims[0] = first;
  return Shape(dims.data(), ndim_);
}

bool Shape::operator==(const Shape& other) const {
  if (ndim_ != other.ndim_) return false;
  for (size_t i = 0; i < ndim_; ++i) {
    if (dims_[i] != other.dims_[i]) return false;
  }
  return true;
}

std::string Shape::to_string() const {
  std::string text = "(";
  for (size_t i = 0; i < ndim_; ++i) {
    if (i > 0) text += ", ";
    text += std::to_string(dims_[i]);
  }
  if (ndim_ == 1) text += ",";
  return text + ")";
}

}  // namespace dt::core
