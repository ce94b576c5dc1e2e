// NDArray: a dense, row-major, contiguous tensor on one context. Copying an
// NDArray object makes another view of the same storage (like MXNet's
// NDArray); reshape and first-axis slices are views too.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "core/context.h"
#include "core/dtype.h"
#include "core/shape.h"
#include "core/storage.h"

namespace dt::core {

class NDArray {
 public:
  NDArray() = default;  // no storage; only for declaring and assigning later

  // Uninitialised contents (for outputs that are written in full).
  static NDArray empty(std::shared_ptr<Context> ctx, DType dtype, const Shape& shape);
  static NDArray zeros(std::shared_ptr<Context> ctx, DType dtype, const Shape& shape);

  bool defined() const { return storage_ != nullptr; }
  const Shape& shape() const { return shape_; }
  DType dtype() const { return dtype_; }
  const std::shared_ptr<Context>& context() const { return storage_->context(); }
  size_t size() const { return static_cast<size_t>(shape_.numel()); }
  size_t nbytes() const { return size() * dtype_size(dtype_); }

  void* data() const { return static_cast<char*>(storage_->data()) + offset_; }
  // How many arrays (this one, its copies and views) share its storage: an
  // owner that hands out views learns whether one is still held.
  long storage_use_count() const { return storage_.use_count(); }
  template <typename T>
  T* data_as() const {
    return static_cast<T*>(data());
  }

  // A view with `shape`, which must have the same element count
  // (Error(kShapeMismatch) otherwise).
  NDArray reshape(const Shape& shape) const;
  // Rows [begin, end) of the first axis, as a view.
  NDArray slice(int64_t begin, int64_t end) const;

  // Byte counts must equal nbytes() exactly (Error(kShapeMismatch) otherwise):
  // a wrong count is almost always a wrong dtype or shape on the caller's side.
  void copy_from_host(const void* src, size_t bytes) const;
  void copy_to_host(void* dst, size_t bytes) const;
  // *this = src: same dtype and shape, any contexts.
  void copy_from(const NDArray& src) const;

 private:
  NDArray(std::shared_ptr<Storage> storage, size_t offset, const Shape& shape, DType dtype)
      : storage_(std::move(storage)), offset_(offset), shape_(shape), dtype_(dtype) {}
  static NDArray allocate(std::shared_ptr<Context> ctx, DType dtype, const Shape& shape, bool zero);

  std::shared_ptr<Storage> storage_;
  size_t offset_ = 0;
  Shape shape_;
  DType dtype_ = DType::kFloat32;
};

// The shape that `dims` asks for when reshaping `numel` elements: at most one
// dim may be -1 and is inferred. Throws Error(kInvalidArgument) for other
// negatives or a second -1, Error(kShapeMismatch) when the counts differ.
Shape infer_reshape(const int64_t* dims, size_t ndim, int64_t numel);

}  // namespace dt::core
