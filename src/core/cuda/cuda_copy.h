// CUDA copies behind core/copy.h. Each is queued on a GPU context's stream, so
// it runs after the work already queued there (a fill, a kernel), and each
// waits for the copy before returning, so host buffers may be reused at once.
#pragma once

#include <cstddef>

#include "core/context.h"

namespace dt::core::cuda {

// Any pair of contexts with at least one GPU. GPU to GPU waits for the
// source's stream, then copies on the destination's stream, or between two
// devices with MXNET_ENABLE_GPU_P2P=0 through host memory
// (core/gpu_copy_path.h; the destination context counts each copy's path).
void copy_between(const Context& dst_ctx, void* dst, const Context& src_ctx, const void* src, size_t bytes);
// Host memory to and from a GPU context's memory.
void copy_from_host(const Context& dst_ctx, void* dst, const void* src, size_t bytes);
void copy_to_host(void* dst, const Context& src_ctx, const void* src, size_t bytes);

}  // namespace dt::core::cuda
