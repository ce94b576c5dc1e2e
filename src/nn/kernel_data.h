// KernelData: an array's elements as a kernel call takes them. The ops of
// ops/ take untyped pointers to activations, weights and their gradients,
// of the dtype the op was built for (float32 on the CPU; float32, or a
// mixed-precision net's float16 / bfloat16 on a GPU), and float* for what is
// float32 on every device (biases, BatchNorm's parameters). One template
// body (Dense and Conv2D share theirs) then serves both devices, each kernel
// argument converting to what the op declares.
#pragma once

#include <string>

#include "core/dtype.h"
#include "core/error.h"
#include "core/ndarray.h"

namespace dt::nn {

class KernelData {
 public:
  explicit KernelData(const core::NDArray& array) : ptr_(array.data()), dtype_(array.dtype()) {}
  KernelData(void* ptr, core::DType dtype) : ptr_(ptr), dtype_(dtype) {}

  void* get() const { return ptr_; }
  core::DType dtype() const { return dtype_; }

  // For a float32 argument (every CPU kernel's, a GPU kernel's bias and
  // BatchNorm parameters). A 16-bit array read as float would be garbage,
  // and reaching one here is a bug in the layer: Error(kInternal).
  operator float*() const {
    if (ptr_ != nullptr && dtype_ != core::DType::kFloat32) {
      throw core::Error(core::ErrorCode::kInternal, std::string("a ") + core::dtype_name(dtype_) +
                                                        " array reached a float32-only kernel argument");
    }
    return static_cast<float*>(ptr_);
  }
  // For a GPU kernel's activations, weights and their gradients, whose
  // dtype the kernel was built with.
  operator void*() const { return ptr_; }

 private:
  void* ptr_;
  core::DType dtype_;
};

}  // namespace dt::nn
