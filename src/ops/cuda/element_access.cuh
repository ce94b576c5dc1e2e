// How CUDA kernels read and write the floating element types of arrays:
// float16 and bfloat16 load as float, compute in float and store rounded to
// nearest even, as the CPU conversions do (core/dtype.h); float and double
// are themselves. Shared by every .cu file whose kernels take the dtype of
// their arrays at run time (tensor math, the layer kernels of mixed
// precision, gradient casting).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <string>

#include "core/dtype.h"
#include "core/error.h"

namespace dt::ops::cuda {

template <typename T>
struct Element {
  using Compute = T;
  __device__ static T load(T v) { return v; }
  __device__ static T store(T v) { return v; }
};
template <>
struct Element<__half> {
  using Compute = float;
  __device__ static float load(__half v) { return __half2float(v); }
  __device__ static __half store(float v) { return __float2half_rn(v); }
};
template <>
struct Element<__nv_bfloat16> {
  using Compute = float;
  __device__ static float load(__nv_bfloat16 v) { return __bfloat162float(v); }
  __device__ static __nv_bfloat16 store(float v) { return __float2bfloat16_rn(v); }
};

// Loads element i of an array of T as float.
template <typename T>
__device__ inline float load_float(const T* p, int64_t i) {
  return static_cast<float>(Element<T>::load(p[i]));
}
// Stores v, rounded to T, as element i.
template <typename T>
__device__ inline void store_float(T* p, int64_t i, float v) {
  p[i] = Element<T>::store(static_cast<typename Element<T>::Compute>(v));
}

// Calls fn(T{}) with T the device type of an activation dtype of a network:
// float32, float16 or bfloat16. Others are Error(kNotSupported) naming
// `what`, since the layers check dtypes before any kernel is reached.
template <typename Fn>
void dispatch_activation_dtype(core::DType dtype, const char* what, Fn&& fn) {
  switch (dtype) {
    case core::DType::kFloat32: fn(float{}); return;
    case core::DType::kFloat16: fn(__half{}); return;
    case core::DType::kBFloat16: fn(__nv_bfloat16{}); return;
    default: break;
  }
  throw core::Error(core::ErrorCode::kNotSupported, std::string(what) + ": no kernel for " +
                                                        core::dtype_name(dtype) +
                                                        " (float32, float16 or bfloat16 only)");
}

}  // namespace dt::ops::cuda
