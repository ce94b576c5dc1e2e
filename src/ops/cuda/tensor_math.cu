#include "ops/cuda/tensor_math.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <string>
#include <type_traits>

#include "core/cuda/cuda_check.h"
#include "core/cuda/device_guard.h"
#include "core/cuda/gpu_context.h"
#include "core/cuda/grid_launch.cuh"
#include "core/error.h"
#include "ops/cuda/element_access.cuh"

namespace dt::ops::cuda {

using core::DType;

namespace {

using core::cuda::first_index;
using core::cuda::grid_stride;
using core::cuda::launch_grid;

// std::numeric_limits is host-only without --expt-relaxed-constexpr.
template <typename I>
struct IntRange;
template <>
struct IntRange<int32_t> {
  static constexpr int32_t kMin = INT32_MIN;
  static constexpr int32_t kMax = INT32_MAX;
};
template <>
struct IntRange<int64_t> {
  static constexpr int64_t kMin = INT64_MIN;
  static constexpr int64_t kMax = INT64_MAX;
};
template <>
struct IntRange<uint8_t> {
  static constexpr uint8_t kMin = 0;
  static constexpr uint8_t kMax = UINT8_MAX;
};

// nvcc fuses y + a * x into one FMA; the CPU kernels round the product
// first, and so does this, to give the same bits.
__device__ float multiply_rounded(float a, float b) { return __fmul_rn(a, b); }
__device__ double multiply_rounded(double a, double b) { return __dmul_rn(a, b); }

template <typename D, typename S>
__device__ D convert(S s) {
  if constexpr (std::is_integral_v<D> && std::is_integral_v<S>) {
    const int64_t v = static_cast<int64_t>(s);
    if (v < static_cast<int64_t>(IntRange<D>::kMin)) return IntRange<D>::kMin;
    if (v > static_cast<int64_t>(IntRange<D>::kMax)) return IntRange<D>::kMax;
    return static_cast<D>(v);
  } else if constexpr (std::is_integral_v<D>) {
    // The conversion itself is undefined out of range, hence the clamps.
    const double v = static_cast<double>(Element<S>::load(s));
    if (v != v) return 0;
    const double t = ::trunc(v);
    if (t <= static_cast<double>(IntRange<D>::kMin)) return IntRange<D>::kMin;
    if (t >= static_cast<double>(IntRange<D>::kMax)) return IntRange<D>::kMax;
    return static_cast<D>(t);
  } else {
    // Through the destination's compute type, so that double -> half rounds
    // twice exactly as the CPU does (double -> float -> half).
    using C = typename Element<D>::Compute;
    return Element<D>::store(static_cast<C>(Element<S>::load(s)));
  }
}

template <typename T>
__global__ void fill_kernel(T* dst, size_t count, T value) {
  for (size_t i = first_index(); i < count; i += grid_stride()) dst[i] = value;
}

template <typename T>
__global__ void add_kernel(T* out, const T* a, const T* b, size_t count) {
  using E = Element<T>;
  for (size_t i = first_index(); i < count; i += grid_stride()) out[i] = E::store(E::load(a[i]) + E::load(b[i]));
}

template <typename T>
__global__ void scale_kernel(T* arr, typename Element<T>::Compute alpha, size_t count) {
  using E = Element<T>;
  for (size_t i = first_index(); i < count; i += grid_stride()) arr[i] = E::store(alpha * E::load(arr[i]));
}

template <typename T>
__global__ void axpy_kernel(T* y, typename Element<T>::Compute alpha, const T* x, size_t count) {
  using E = Element<T>;
  for (size_t i = first_index(); i < count; i += grid_stride()) {
    y[i] = E::store(E::load(y[i]) + multiply_rounded(alpha, E::load(x[i])));
  }
}

template <typename D, typename S>
__global__ void cast_kernel(D* dst, const S* src, size_t count) {
  for (size_t i = first_index(); i < count; i += grid_stride()) dst[i] = convert<D, S>(src[i]);
}


// Calls fn(T{}) with T the device storage type of dtype.
template <typename Fn>
void dispatch(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::kFloat32: fn(float{}); return;
    case DType::kFloat16: fn(__half{}); return;
    case DType::kBFloat16: fn(__nv_bfloat16{}); return;
    case DType::kFloat64: fn(double{}); return;
    case DType::kInt32: fn(int32_t{}); return;
    case DType::kInt64: fn(int64_t{}); return;
    case DType::kUInt8: fn(uint8_t{}); return;
  }
  throw core::Error(core::ErrorCode::kInternal, "CUDA tensor math reached an unknown dtype");
}

// Only the floating types are instantiated: arithmetic kernels for integers
// would be compiled for nothing.
template <typename Fn>
void dispatch_floating(DType dtype, Fn&& fn) {
  if (!core::is_floating(dtype)) {
    throw core::Error(core::ErrorCode::kNotSupported,
                      std::string("arithmetic on ") + core::dtype_name(dtype) + " arrays is not supported");
  }
  dispatch(dtype, [&](auto tag) {
    if constexpr (!std::is_integral_v<decltype(tag)>) fn(tag);
  });
}

}  // namespace

void fill_pattern(const core::Context& ctx, void* dst, size_t count, uint64_t bits, size_t element_size) {
  switch (element_size) {
    case 1: {
      if (count == 0) return;
      const cudaStream_t stream = core::cuda::stream_of(ctx);
      core::cuda::DeviceGuard guard(ctx.device_id());
      DT_CUDA_CHECK(cudaMemsetAsync(dst, static_cast<int>(bits & 0xff), count, stream));
      return;
    }
    case 2:
      launch_grid(ctx, "fill kernel launch", count, fill_kernel<uint16_t>, static_cast<uint16_t*>(dst), count,
                  static_cast<uint16_t>(bits));
      return;
    case 4:
      launch_grid(ctx, "fill kernel launch", count, fill_kernel<uint32_t>, static_cast<uint32_t*>(dst), count,
                  static_cast<uint32_t>(bits));
      return;
    case 8:
      launch_grid(ctx, "fill kernel launch", count, fill_kernel<uint64_t>, static_cast<uint64_t*>(dst), count, bits);
      return;
    default:
      throw core::Error(core::ErrorCode::kInternal, "fill of a " + std::to_string(element_size) + "-byte element");
  }
}

void add(const core::Context& ctx, DType dtype, void* out, const void* a, const void* b, size_t count) {
  dispatch_floating(dtype, [&](auto tag) {
    using T = decltype(tag);
    launch_grid(ctx, "add kernel launch", count, add_kernel<T>, static_cast<T*>(out), static_cast<const T*>(a),
                static_cast<const T*>(b), count);
  });
}

void scale(const core::Context& ctx, DType dtype, void* arr, double alpha, size_t count) {
  dispatch_floating(dtype, [&](auto tag) {
    using T = decltype(tag);
    using C = typename Element<T>::Compute;
    launch_grid(ctx, "scale kernel launch", count, scale_kernel<T>, static_cast<T*>(arr), static_cast<C>(alpha), count);
  });
}

void axpy(const core::Context& ctx, DType dtype, void* y, double alpha, const void* x, size_t count) {
  dispatch_floating(dtype, [&](auto tag) {
    using T = decltype(tag);
    using C = typename Element<T>::Compute;
    launch_grid(ctx, "axpy kernel launch", count, axpy_kernel<T>, static_cast<T*>(y), static_cast<C>(alpha),
                static_cast<const T*>(x), count);
  });
}

void cast(const core::Context& ctx, DType dst_dtype, void* dst, DType src_dtype, const void* src, size_t count) {
  if (dst_dtype == src_dtype) {
    // A cast of an array onto itself leaves it as it is; cudaMemcpy must not
    // be given that overlap.
    if (count == 0 || dst == src) return;
    const cudaStream_t stream = core::cuda::stream_of(ctx);
    core::cuda::DeviceGuard guard(ctx.device_id());
    DT_CUDA_CHECK(cudaMemcpyAsync(dst, src, count * core::dtype_size(dst_dtype), cudaMemcpyDeviceToDevice, stream));
    return;
  }
  dispatch(dst_dtype, [&](auto dst_tag) {
    dispatch(src_dtype, [&](auto src_tag) {
      using D = decltype(dst_tag);
      using S = decltype(src_tag);
      // Equal types took the memcpy above; not instantiating them keeps the
      // build smaller.
      if constexpr (!std::is_same_v<D, S>) {
        launch_grid(ctx, "cast kernel launch", count, cast_kernel<D, S>, static_cast<D*>(dst), static_cast<const S*>(src),
                    count);
      }
    });
  });
}

}  // namespace dt::ops::cuda
