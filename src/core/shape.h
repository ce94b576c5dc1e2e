// The dims of an array: up to kMaxNDim int64 extents, with overflow-checked
// element and byte counts.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace dt::core {

constexpr size_t kMaxNDim = 8;

class Shape {
 public:
  Shape() = default;  // a scalar: zero dims, one element
  // Throws Error(kInvalidArgument) for more than kMaxNDim dims, a negative dim,
  // or an element count that overflows int64.
  Shape(const int64_t* dims, size_t ndim);
  Shape(std::initializer_list<int64_t> dims);
  explicit Shape(const std::vector<int64_t>& dims);

  size_t ndim() const { return ndim_; }
  int64_t operator[](size_t i) const { return dims_[i]; }
  const int64_t* data() const { return dims_.data(); }
  std::vector<int64_t> to_vector() const { return {dims_.begin(), dims_.begin() + ndim_}; }
  int64_t numel() const { return numel_; }

  // numel() * element_size, throwing Error(kInvalidArgument) if it does not
  // fit in size_t (or PTRDIFF_MAX, so that pointer arithmetic stays defined).
  size_t nbytes(size_t element_size) const;

  // The same shape with dim 0 replaced (used by slicing along the first axis).
  Shape with_first_dim(int64_t first) const;

  bool operator==(const Shape& other) const;
  bool operator!=(const Shape& other) const { return !(*this == other); }
  std::string to_string() const;  // "(2, 3)"

 private:
  std::array<int64_t, kMaxNDim> dims_{};
  size_t ndim_ = 0;
  int64_t numel_ = 1;
};

}  // namespace dt::core
