#include "collective/host/reduce_kernels.h"

#include <cstdint>
#include <string>
#include <type_traits>

#include "core/error.h"
#include "ops/cpu/tensor_math.h"

namespace dt::collective::host {

namespace {

// Unsigned arithmetic, so that overflow wraps instead of being undefined;
// __restrict lets GCC vectorise without a runtime overlap check.
template <typename T>
void add_integers(T* __restrict dst, const T* __restrict src, size_t count) {
  using U = std::make_unsigned_t<T>;
  for (size_t i = 0; i < count; ++i) {
    dst[i] = static_cast<T>(static_cast<U>(dst[i]) + static_cast<U>(src[i]));
  }
}

}  // namespace

void sum_into(core::DType dtype, void* dst, const void* src, size_t count, bool src_first) {
  switch (dtype) {
    case core::DType::kFloat32:
      // The library's vectorised float add (ops/cpu/tensor_math.cc); out may
      // alias either input.
      if (src_first) {
        ops::cpu::add(dtype, dst, src, dst, count);
      } else {
        ops::cpu::add(dtype, dst, dst, src, count);
      }
      return;
    case core::DType::kInt32:
      add_integers(static_cast<int32_t*>(dst), static_cast<const int32_t*>(src), count);
      return;
    case core::DType::kInt64:
      add_integers(static_cast<int64_t*>(dst), static_cast<const int64_t*>(src), count);
      return;
    default:
      break;
  }
  throw core::Error(core::ErrorCode::kInternal,
                    std::string("host collective: no sum kernel for ") + core::dtype_name(dtype));
}

}  // namespace dt::collective::host
