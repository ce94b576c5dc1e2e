// RAII owners of cuDNN descriptors: each is created in its constructor and
// destroyed with its owner, whatever exception ends the owner's construction.
#pragma once

#include <cudnn.h>

#include "core/cuda/library_handles.h"

namespace dt::ops::cuda {

template <typename T, cudnnStatus_t (*Create)(T*), cudnnStatus_t (*Destroy)(T)>
class CudnnDescriptor {
 public:
  CudnnDescriptor() { DT_CUDNN_CHECK(Create(&desc_)); }
  ~CudnnDescriptor() { static_cast<void>(Destroy(desc_)); }
  CudnnDescriptor(const CudnnDescriptor&) = delete;
  CudnnDescriptor& operator=(const CudnnDescriptor&) = delete;

  T get() const { return desc_; }

 private:
  T desc_ = nullptr;
};

using TensorDescriptor =
    CudnnDescriptor<cudnnTensorDescriptor_t, &cudnnCreateTensorDescriptor, &cudnnDestroyTensorDescriptor>;
using FilterDescriptor =
    CudnnDescriptor<cudnnFilterDescriptor_t, &cudnnCreateFilterDescriptor, &cudnnDestroyFilterDescriptor>;
using ConvolutionDescriptor = CudnnDescriptor<cudnnConvolutionDescriptor_t, &cudnnCreateConvolutionDescriptor,
                                              &cudnnDestroyConvolutionDescriptor>;

}  // namespace dt::ops::cuda
