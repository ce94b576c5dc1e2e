#include "ops/tensor_math.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "core/error.h"
#include "ops/cpu/reduction_pool.h"
#include "ops/cpu/tensor_math.h"
#if DT_WITH_CUDA
#include "ops/cuda/tensor_math.h"
#endif

namespace dt::ops {

using core::DType;
using core::Error;
using core::ErrorCode;
using core::NDArray;

namespace {

void require_same_context(const NDArray& a, const NDArray& b, const char* op) {
  const auto& ca = *a.context();
  const auto& cb = *b.context();
  if (!core::same_device(ca, cb)) {
    throw Error(ErrorCode::kInvalidArgument,
                std::string(op) + ": arrays on " + ca.to_string() + " and " + cb.to_string() + " (copy first)");
  }
}

void require_same_shape(const NDArray& a, const NDArray& b, const char* op) {
  if (a.shape() != b.shape()) {
    throw Error(ErrorCode::kShapeMismatch,
                std::string(op) + ": shapes " + a.shape().to_string() + " and " + b.shape().to_string() + " differ");
  }
}

void require_same_dtype(const NDArray& a, const NDArray& b, const char* op) {
  if (a.dtype() != b.dtype()) {
    throw Error(ErrorCode::kDtypeMismatch, std::string(op) + ": dtypes " + core::dtype_name(a.dtype()) + " and " +
                                               core::dtype_name(b.dtype()) + " differ");
  }
}

void require_floating(const NDArray& a, const char* op) {
  if (!core::is_floating(a.dtype())) {
    throw Error(ErrorCode::kNotSupported,
                std::string(op) + " is defined for floating-point arrays, not " + core::dtype_name(a.dtype()));
  }
}

void require_same_kind(const NDArray& a, const NDArray& b, const char* op) {
  require_same_context(a, b, op);
  require_same_dtype(a, b, op);
  require_same_shape(a, b, op);
}

template <typename I>
uint64_t integer_bits(double value, const char* name) {
  const double rounded = std::round(value);
  if (std::isnan(value) || rounded < static_cast<double>(std::numeric_limits<I>::lowest()) ||
      rounded > static_cast<double>(std::numeric_limits<I>::max())) {
    throw Error(ErrorCode::kInvalidArgument, "fill value " + std::to_string(value) + " is out of range for " + name);
  }
  const I v = static_cast<I>(rounded);
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof v);  // little-endian: the low bytes are the element
  return bits;
}

// The bit pattern of one element of `dtype` holding `value`.
// A finite value that becomes infinite in the narrower dtype is out of its
// range: an error, as for integers, never a silent inf.
void check_float_range(bool became_infinite, double value, const char* dtype) {
  if (became_infinite && std::isfinite(value)) {
    throw Error(ErrorCode::kInvalidArgument, "fill value " + std::to_string(value) + " is out of range for " + dtype);
  }
}

uint64_t element_bits(DType dtype, double value) {
  // Past FLT_MAX the conversion to float is not defined: clamp first (to
  // infinity, which the range check then refuses).
  const double limit = std::numeric_limits<float>::max();
  const float infinity = std::numeric_limits<float>::infinity();
  const float narrowed = value > limit ? infinity : value < -limit ? -infinity : static_cast<float>(value);
  switch (dtype) {
    case DType::kFloat32: {
      check_float_range(std::isinf(narrowed), value, "F32");
      uint32_t bits;
      std::memcpy(&bits, &narrowed, sizeof bits);
      return bits;
    }
    case DType::kFloat64: {
      uint64_t bits;
      std::memcpy(&bits, &value, sizeof bits);
      return bits;
    }
    case DType::kFloat16: {
      const uint16_t bits = core::float_to_half(narrowed);
      check_float_range((bits & 0x7fff) == 0x7c00, value, "F16");
      return bits;
    }
    case DType::kBFloat16: {
      const uint16_t bits = core::float_to_bfloat16(narrowed);
      check_float_range((bits & 0x7fff) == 0x7f80, value, "BF16");
      return bits;
    }
    case DType::kInt32: return integer_bits<int32_t>(value, "I32");
    case DType::kInt64: {
      // Doubles at or above 2^63 do not fit; 2^63 itself is representable, hence >=.
      if (!std::isnan(value) && std::round(value) >= 9223372036854775808.0) {
        throw Error(ErrorCode::kInvalidArgument, "fill value " + std::to_string(value) + " is out of range for I64");
      }
      return integer_bits<int64_t>(value, "I64");
    }
    case DType::kUInt8: return integer_bits<uint8_t>(value, "U8");
  }
  throw Error(ErrorCode::kInternal, "fill reached an unknown dtype");
}

}  // namespace

void fill(const NDArray& arr, double value) {
  const uint64_t bits = element_bits(arr.dtype(), value);
  const size_t element_size = core::dtype_size(arr.dtype());
  if (arr.context()->is_cpu()) {
    cpu::fill_pattern(arr.data(), arr.size(), bits, element_size);
    return;
  }
#if DT_WITH_CUDA
  cuda::fill_pattern(*arr.context(), arr.data(), arr.size(), bits, element_size);
#endif
}

void add(const NDArray& out, const NDArray& a, const NDArray& b) {
  require_same_kind(out, a, "add");
  require_same_kind(out, b, "add");
  require_floating(out, "add");
  if (out.context()->is_cpu()) {
    cpu::add(out.dtype(), out.data(), a.data(), b.data(), out.size());
    return;
  }
#if DT_WITH_CUDA
  cuda::add(*out.context(), out.dtype(), out.data(), a.data(), b.data(), out.size());
#endif
}

void add(const NDArray& out, const NDArray& a, const NDArray& b, cpu::ReductionPool& pool) {
  if (!out.context()->is_cpu()) {
    add(out, a, b);
    return;
  }
  require_same_kind(out, a, "add");
  require_same_kind(out, b, "add");
  require_floating(out, "add");
  pool.add(out.dtype(), out.data(), a.data(), b.data(), out.size());
}

void scale(const NDArray& arr, double alpha) {
  require_floating(arr, "scale");
  if (arr.context()->is_cpu()) {
    cpu::scale(arr.dtype(), arr.data(), alpha, arr.size());
    return;
  }
#if DT_WITH_CUDA
  cuda::scale(*arr.context(), arr.dtype(), arr.data(), alpha, arr.size());
#endif
}

void axpy(const NDArray& y, double alpha, const NDArray& x) {
  require_same_kind(y, x, "axpy");
  require_floating(y, "axpy");
  if (y.context()->is_cpu()) {
    cpu::axpy(y.dtype(), y.data(), alpha, x.data(), y.size());
    return;
  }
#if DT_WITH_CUDA
  cuda::axpy(*y.context(), y.dtype(), y.data(), alpha, x.data(), y.size());
#endif
}

void cast(const NDArray& dst, const NDArray& src) {
  require_same_context(dst, src, "cast");
  require_same_shape(dst, src, "cast");
  if (dst.context()->is_cpu()) {
    cpu::cast(dst.dtype(), dst.data(), src.dtype(), src.data(), dst.size());
    return;
  }
#if DT_WITH_CUDA
  cuda::cast(*dst.context(), dst.dtype(), dst.data(), src.dtype(), src.data(), dst.size());
#endif
}

}  // namespace dt::ops
