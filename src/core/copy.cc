#include "core/copy.h"

#include <cstring>

#include "core/error.h"
#if DT_WITH_CUDA
#include "core/cuda/cuda_copy.h"
#endif

namespace dt::core {

void copy_bytes(const Context& dst_ctx, void* dst, const Context& src_ctx, const void* src, size_t bytes) {
  if (bytes == 0) return;
  if (dst_ctx.is_cpu() && src_ctx.is_cpu()) {
    std::memmove(dst, src, bytes);
    return;
  }
#if DT_WITH_CUDA
  cuda::copy_between(dst_ctx, dst, src_ctx, src, bytes);
#else
  throw Error(ErrorCode::kNotSupported, "copy involving a GPU in a build without CUDA");
#endif
}

void copy_from_host(const Context& dst_ctx, void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  if (dst_ctx.is_cpu()) {
    std::memcpy(dst, src, bytes);
    return;
  }
#if DT_WITH_CUDA
  cuda::copy_from_host(dst_ctx, dst, src, bytes);
#else
  throw Error(ErrorCode::kNotSupported, "copy to a GPU in a build without CUDA");
#endif
}

void copy_to_host(void* dst, const Context& src_ctx, const void* src, size_t bytes) {
  if (bytes == 0) return;
  if (src_ctx.is_cpu()) {
    std::memcpy(dst, src, bytes);
    return;
  }
#if DT_WITH_CUDA
  cuda::copy_to_host(dst, src_ctx, src, bytes);
#else
  throw Error(ErrorCode::kNotSupported, "copy from a GPU in a build without CUDA");
#endif
}

}  // namespace dt::core
