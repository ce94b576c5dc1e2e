// How the update kernels read and write one weight element of each supported
// dtype: loads widen to the compute type, stores round back (to nearest even
// for the 16-bit formats). Templates, so the float32 loops compile to plain
// vectorisable arithmetic with no per-element dispatch.
#pragma once

#include <cstdint>
#include <string>

#include "core/dtype.h"
#include "core/error.h"

namespace dt::optim::detail {

struct Float32Elem {
  using Storage = float;
  using Compute = float;
  static float load(float v) { return v; }
  static float store(float v) { return v; }
};

struct Float64Elem {
  using Storage = double;
  using Compute = double;
  static double load(double v) { return v; }
  static double store(double v) { return v; }
};

struct Float16Elem {
  using Storage = uint16_t;
  using Compute = float;
  static float load(uint16_t v) { return core::half_to_float(v); }
  static uint16_t store(float v) { return core::float_to_half(v); }
};

struct BFloat16Elem {
  using Storage = uint16_t;
  using Compute = float;
  static float load(uint16_t v) { return core::bfloat16_to_float(v); }
  static uint16_t store(float v) { return core::float_to_bfloat16(v); }
};

// Calls fn(Elem{}) with the element type of `dtype`; Error(kNotSupported)
// naming `who` for a dtype no optimizer updates (integers).
template <typename Fn>
void dispatch_weight_dtype(core::DType dtype, const std::string& who, Fn&& fn) {
  switch (dtype) {
    case core::DType::kFloat32: fn(Float32Elem{}); return;
    case core::DType::kFloat64: fn(Float64Elem{}); return;
    case core::DType::kFloat16: fn(Float16Elem{}); return;
    case core::DType::kBFloat16: fn(BFloat16Elem{}); return;
    default: break;
  }
  throw core::Error(core::ErrorCode::kNotSupported,
                    who + ": cannot update " + core::dtype_name(dtype) + " weights (floating dtypes only)");
}

// One pass over a weight: new_w = step(i, w) for every element. With a
// float32 master copy (multi-precision) the master is read and written and
// the weight receives the rounded result; otherwise the weight is widened,
// updated and rounded in place.
template <typename Elem, typename Step>
void update_elements(typename Elem::Storage* weight, typename Elem::Compute* master, size_t n, Step&& step) {
  if (master != nullptr) {
    for (size_t i = 0; i < n; ++i) {
      const typename Elem::Compute w = step(i, master[i]);
      master[i] = w;
      weight[i] = Elem::store(w);
    }
  } else {
    for (size_t i = 0; i < n; ++i) weight[i] = Elem::store(step(i, Elem::load(weight[i])));
  }
}

}  // namespace dt::optim::detail
