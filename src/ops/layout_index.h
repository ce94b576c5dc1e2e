// The memory order of a 4-d activation: NCHW (the library's default, as in
// MXNet and PyTorch) or NHWC (channels last, what tensor-core convolutions
// in float16/bfloat16 read without a transpose). The index functions below
// are the only place the two orders are spelled out: the CPU loops and the
// CUDA kernels (conversion, bias, batch norm, pooling) all call them, so the
// CPU tests of them cover the GPU kernels' index math too. Plain integers
// only, so that nvcc parses nothing else (host helpers: ops/tensor_layout.h).
//
// Dims are always the logical (N, C, H, W); a layout only says where
// element (n, c, h, w) lives.
#pragma once

#include <cstdint>

#include "core/host_device.h"

namespace dt::ops {

enum class TensorLayout : uint8_t { kNCHW = 0, kNHWC = 1 };

struct LayoutCoords {
  int64_t n, c, h, w;
};

// Linear offset of element (n, c, h, w).
DT_HOST_DEVICE inline int64_t layout_offset(TensorLayout layout, int64_t n, int64_t c, int64_t h, int64_t w,
                                            int64_t C, int64_t H, int64_t W) {
  return layout == TensorLayout::kNCHW ? ((n * C + c) * H + h) * W + w : ((n * H + h) * W + w) * C + c;
}

// The coordinates of the element at linear offset `index`: the inverse of
// layout_offset, what a kernel with one thread per element of either
// layout starts from.
DT_HOST_DEVICE inline LayoutCoords layout_coords(TensorLayout layout, int64_t index, int64_t C, int64_t H,
                                                 int64_t W) {
  if (layout == TensorLayout::kNCHW) {
    return {index / (W * H * C), (index / (W * H)) % C, (index / W) % H, index % W};
  }
  return {index / (C * W * H), index % C, (index / (C * W)) % H, (index / C) % W};
}

// The channel of the element at linear offset `index` (what per-channel
// kernels, bias and batch norm, need of every element); plane = H * W. A
// template so that kernels over small tensors divide in 32 bits.
template <typename Index>
DT_HOST_DEVICE inline Index layout_channel(TensorLayout layout, Index index, Index C, Index plane) {
  return layout == TensorLayout::kNCHW ? (index / plane) % C : index % C;
}

// Where the H x W plane of (n, c) starts, and the distance between two
// neighbouring positions of it (h*W + w and h*W + w + 1): a pooling window
// visits base + (h * W + w) * step in either layout.
DT_HOST_DEVICE inline int64_t layout_plane_base(TensorLayout layout, int64_t n, int64_t c, int64_t C,
                                                int64_t plane) {
  return layout == TensorLayout::kNCHW ? (n * C + c) * plane : n * plane * C + c;
}
DT_HOST_DEVICE inline int64_t layout_plane_step(TensorLayout layout, int64_t C) {
  return layout == TensorLayout::kNCHW ? 1 : C;
}

// Conversion read as a gather: the offset in an array of layout `from` of
// the element that lands at offset dst_index of an array of layout `to`.
DT_HOST_DEVICE inline int64_t layout_source_offset(int64_t dst_index, TensorLayout to, TensorLayout from, int64_t C,
                                                   int64_t H, int64_t W) {
  const LayoutCoords at = layout_coords(to, dst_index, C, H, W);
  return layout_offset(from, at.n, at.c, at.h, at.w, C, H, W);
}

}  // namespace dt::ops
