// Moving bytes between contexts: the one place that knows which copy engine
// (memcpy or CUDA) serves a pair of devices.
#pragma once

#include <cstddef>

#include "core/context.h"

namespace dt::core {

// Copies `bytes` between any two contexts (host memcpy, or CUDA copies when a
// GPU is involved). Returns when the bytes are at dst.
void copy_bytes(const Context& dst_ctx, void* dst, const Context& src_ctx, const void* src, size_t bytes);

// Host memory <-> a context's memory, complete on return.
void copy_from_host(const Context& dst_ctx, void* dst, const void* src, size_t bytes);
void copy_to_host(void* dst, const Context& src_ctx, const void* src, size_t bytes);

}  // namespace dt::core
