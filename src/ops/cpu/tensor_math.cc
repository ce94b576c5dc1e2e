#include "ops/cpu/tensor_math.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "core/error.h"

namespace dt::ops::cpu {

using core::DType;

namespace {

// 16-bit float storage types, so that templates can tell them from uint16_t.
struct Half {
  uint16_t bits;
};
struct BFloat16 {
  uint16_t bits;
};

// How one element is read as and written from its compute type: float for
// the 16-bit formats (they have no arithmetic of their own), itself otherwise.
template <typename T>
struct Element {
  using Compute = T;
  static Compute load(T v) { return v; }
  static T store(Compute v) { return v; }
};
template <>
struct Element<Half> {
  using Compute = float;
  static float load(Half v) { return core::half_to_float(v.bits); }
  static Half store(float v) { return Half{core::float_to_half(v)}; }
};
template <>
struct Element<BFloat16> {
  using Compute = float;
  static float load(BFloat16 v) { return core::bfloat16_to_float(v.bits); }
  static BFloat16 store(float v) { return BFloat16{core::float_to_bfloat16(v)}; }
};

// Calls fn(T{}) with T the storage type of dtype.
template <typename Fn>
void dispatch(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::kFloat32: fn(float{}); return;
    case DType::kFloat16: fn(Half{}); return;
    case DType::kBFloat16: fn(BFloat16{}); return;
    case DType::kFloat64: fn(double{}); return;
    case DType::kInt32: fn(int32_t{}); return;
    case DType::kInt64: fn(int64_t{}); return;
    case DType::kUInt8: fn(uint8_t{}); return;
  }
  throw core::Error(core::ErrorCode::kInternal, "tensor math reached an unknown dtype");
}

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

// Float to integer: truncate toward zero, saturate at the type's range, NaN -> 0
// (the conversion itself would be undefined behaviour out of range).
template <typename I>
I saturating_integer(double v) {
  if (std::isnan(v)) return 0;
  const double t = std::trunc(v);
  if (t <= static_cast<double>(std::numeric_limits<I>::lowest())) return std::numeric_limits<I>::lowest();
  if (t >= static_cast<double>(std::numeric_limits<I>::max())) return std::numeric_limits<I>::max();
  return static_cast<I>(t);
}

template <typename D, typename S>
D convert(S s) {
  if constexpr (std::is_integral_v<D> && std::is_integral_v<S>) {
    const int64_t v = static_cast<int64_t>(s);
    if (v < static_cast<int64_t>(std::numeric_limits<D>::lowest())) return std::numeric_limits<D>::lowest();
    if (static_cast<uint64_t>(v) > static_cast<uint64_t>(std::numeric_limits<D>::max()) && v > 0) {
      return std::numeric_limits<D>::max();
    }
    return static_cast<D>(v);
  } else if constexpr (std::is_integral_v<D>) {
    return saturating_integer<D>(static_cast<double>(Element<S>::load(s)));
  } else {
    using C = typename Element<D>::Compute;
    return Element<D>::store(static_cast<C>(Element<S>::load(s)));
  }
}

}  // namespace

void fill_pattern(void* dst, size_t count, uint64_t bits, size_t element_size) {
  switch (element_size) {
    case 1: std::memset(dst, static_cast<int>(bits & 0xff), count); return;
    case 2: std::fill_n(static_cast<uint16_t*>(dst), count, static_cast<uint16_t>(bits)); return;
    case 4: std::fill_n(static_cast<uint32_t*>(dst), count, static_cast<uint32_t>(bits)); return;
    case 8: std::fill_n(static_cast<uint64_t*>(dst), count, bits); return;
    default: throw core::Error(core::ErrorCode::kInternal, "fill of a " + std::to_string(element_size) + "-byte element");
  }
}

void add(DType dtype, void* out, const void* a, const void* b, size_t count) {
  dispatch_floating(dtype, [&](auto tag) {
    using T = decltype(tag);
    using E = Element<T>;
    T* o = static_cast<T*>(out);
    const T* x = static_cast<const T*>(a);
    const T* y = static_cast<const T*>(b);
    for (size_t i = 0; i < count; ++i) o[i] = E::store(E::load(x[i]) + E::load(y[i]));
  });
}

void scale(DType dtype, void* arr, double alpha, size_t count) {
  dispatch_floating(dtype, [&](auto tag) {
    using T = decltype(tag);
    using E = Element<T>;
    using C = typename E::Compute;
    const C a = static_cast<C>(alpha);
    T* p = static_cast<T*>(arr);
    for (size_t i = 0; i < count; ++i) p[i] = E::store(a * E::load(p[i]));
  });
}

void axpy(DType dtype, void* y, double alpha, const void* x, size_t count) {
  dispatch_floating(dtype, [&](auto tag) {
    using T = decltype(tag);
    using E = Element<T>;
    using C = typename E::Compute;
    const C a = static_cast<C>(alpha);
    T* out = static_cast<T*>(y);
    const T* in = static_cast<const T*>(x);
    for (size_t i = 0; i < count; ++i) out[i] = E::store(E::load(out[i]) + a * E::load(in[i]));
  });
}

void cast(DType dst_dtype, void* dst, DType src_dtype, const void* src, size_t count) {
  if (dst_dtype == src_dtype) {
    std::memmove(dst, src, count * core::dtype_size(dst_dtype));
    return;
  }
  dispatch(dst_dtype, [&](auto dst_tag) {
    dispatch(src_dtype, [&](auto src_tag) {
      using D = decltype(dst_tag);
      using S = decltype(src_tag);
      D* d = static_cast<D*>(dst);
      const S* s = static_cast<const S*>(src);
      for (size_t i = 0; i < count; ++i) d[i] = convert<D, S>(s[i]);
    });
  });
}

}  // namespace dt::ops::cpu
