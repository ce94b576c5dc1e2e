// dt_ndarray_* and dt_dtype_*: arrays, their queries, copies and arithmetic.
#include <cstring>

#include "c_api/api_guard.h"
#include "c_api/handles.h"
#include "core/dtype.h"
#include "dt_c_api.h"
#include "ops/tensor_math.h"

using dt::c_api::arg;
using dt::c_api::guarded;
using dt::c_api::handle;
using dt::core::Error;
using dt::core::ErrorCode;

namespace {

dt::core::DType checked_dtype(const dt_dtype& dtype) {
  const int value = dt::c_api::raw_enum(dtype);
  if (!dt::core::is_valid_dtype(value)) {
    throw Error(ErrorCode::kInvalidArgument, "unknown dtype value " + std::to_string(value));
  }
  return static_cast<dt::core::DType>(value);
}

}  // namespace

extern "C" {

dt_status dt_dtype_size(size_t* out, dt_dtype dtype) {
  return guarded(__func__, [&] {
    arg(out, "out");
    *out = dt::core::dtype_size(checked_dtype(dtype));
  });
}

const char* dt_dtype_name(dt_dtype dtype) {
  const int value = dt::c_api::raw_enum(dtype);
  if (!dt::core::is_valid_dtype(value)) return "?";
  return dt::core::dtype_name(static_cast<dt::core::DType>(value));
}

dt_status dt_ndarray_create(dt_ndarray** out, const dt_context* ctx, dt_dtype dtype, const int64_t* dims,
                            size_t ndim) {
  return guarded(__func__, [&] {
    arg(out, "out");
    const auto& context = handle(ctx, "ctx").impl;
    const dt::core::Shape shape(dims, ndim);
    auto array = dt::core::NDArray::zeros(context, checked_dtype(dtype), shape);
    *out = dt::c_api::new_handle<dt_ndarray>(std::move(array));
  });
}

void dt_ndarray_free(dt_ndarray* arr) { dt::c_api::free_handle(arr, __func__); }

dt_status dt_ndarray_ndim(size_t* out, const dt_ndarray* arr) {
  return guarded(__func__, [&] {
    arg(out, "out");
    *out = handle(arr, "arr").impl.shape().ndim();
  });
}

dt_status dt_ndarray_shape(int64_t* out_dims, size_t capacity, const dt_ndarray* arr) {
  return guarded(__func__, [&] {
    const auto& shape = handle(arr, "arr").impl.shape();
    if (shape.ndim() == 0) return;  // nothing to write; out_dims may be NULL
    arg(out_dims, "out_dims");
    if (capacity < shape.ndim()) {
      throw Error(ErrorCode::kInvalidArgument, "capacity " + std::to_string(capacity) + " is less than ndim " +
                                                   std::to_string(shape.ndim()));
    }
    std::memcpy(out_dims, shape.data(), shape.ndim() * sizeof(int64_t));
  });
}

dt_status dt_ndarray_dtype(dt_dtype* out, const dt_ndarray* arr) {
  return guarded(__func__, [&] {
    arg(out, "out");
    *out = static_cast<dt_dtype>(handle(arr, "arr").impl.dtype());
  });
}

dt_status dt_ndarray_size(size_t* out, const dt_ndarray* arr) {
  return guarded(__func__, [&] {
    arg(out, "out");
    *out = handle(arr, "arr").impl.size();
  });
}

dt_status dt_ndarray_nbytes(size_t* out, const dt_ndarray* arr) {
  return guarded(__func__, [&] {
    arg(out, "out");
    *out = handle(arr, "arr").impl.nbytes();
  });
}

dt_status dt_ndarray_context(dt_context** out, const dt_ndarray* arr) {
  return guarded(__func__, [&] {
    arg(out, "out");
    *out = dt::c_api::new_handle<dt_context>(handle(arr, "arr").impl.context());
  });
}

dt_status dt_ndarray_copy_from_host(dt_ndarray* arr, const void* src, size_t nbytes) {
  return guarded(__func__, [&] {
    const auto& array = handle(arr, "arr").impl;
    if (nbytes > 0) arg(src, "src");
    array.copy_from_host(src, nbytes);
  });
}

dt_status dt_ndarray_copy_to_host(void* dst, size_t nbytes, const dt_ndarray* arr) {
  return guarded(__func__, [&] {
    const auto& array = handle(arr, "arr").impl;
    if (nbytes > 0) arg(dst, "dst");
    array.copy_to_host(dst, nbytes);
  });
}

dt_status dt_ndarray_copy(dt_ndarray* dst, const dt_ndarray* src) {
  return guarded(__func__, [&] { handle(dst, "dst").impl.copy_from(handle(src, "src").impl); });
}

dt_status dt_ndarray_fill(dt_ndarray* arr, double value) {
  return guarded(__func__, [&] { dt::ops::fill(handle(arr, "arr").impl, value); });
}

dt_status dt_ndarray_reshape(dt_ndarray** out, const dt_ndarray* arr, const int64_t* dims, size_t ndim) {
  return guarded(__func__, [&] {
    arg(out, "out");
    const auto& array = handle(arr, "arr").impl;
    const auto shape = dt::core::infer_reshape(dims, ndim, array.shape().numel());
    *out = dt::c_api::new_handle<dt_ndarray>(array.reshape(shape));
  });
}

dt_status dt_ndarray_slice(dt_ndarray** out, const dt_ndarray* arr, int64_t begin, int64_t end) {
  return guarded(__func__, [&] {
    arg(out, "out");
    *out = dt::c_api::new_handle<dt_ndarray>(handle(arr, "arr").impl.slice(begin, end));
  });
}

dt_status dt_ndarray_add(dt_ndarray* out, const dt_ndarray* a, const dt_ndarray* b) {
  return guarded(__func__, [&] { dt::ops::add(handle(out, "out").impl, handle(a, "a").impl, handle(b, "b").impl); });
}

dt_status dt_ndarray_scale(dt_ndarray* arr, double alpha) {
  return guarded(__func__, [&] { dt::ops::scale(handle(arr, "arr").impl, alpha); });
}

dt_status dt_ndarray_axpy(dt_ndarray* y, double alpha, const dt_ndarray* x) {
  return guarded(__func__, [&] { dt::ops::axpy(handle(y, "y").impl, alpha, handle(x, "x").impl); });
}

dt_status dt_ndarray_cast(dt_ndarray* dst, const dt_ndarray* src) {
  return guarded(__func__, [&] { dt::ops::cast(handle(dst, "dst").impl, handle(src, "src").impl); });
}

}  // extern "C"
