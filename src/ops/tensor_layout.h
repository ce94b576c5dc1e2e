// The memory order of a 4-d activation: NCHW (the library's default, as in
// MXNet and PyTorch) or NHWC (channels last, what tensor-core convolutions
// in float16/bfloat16 read without a transpose). The index functions below
// are the only place the two orders are spelled out: the CPU loops and the
// CUDA kernels (conversion, bias, batch norm, pooling) all call them, so the
// CPU tests of them cover the GPU kernels' index math too.
//
// Dims are always the logical (N, C, H, W); a layout only says where
// element (n, c, h, w) lives.
#pragma once

#include <cstdint>
#include <string>

#include "core/host_device.h"
#include "core/shape.h"

namespace dt::ops {

enum class TensorLayout : uint8_t { kNCHW = 0, kNHWC = 1 };

// "NCHW" / "NHWC", MXNet's spelling of its `layout` attribute.
const char* layout_name(TensorLayout layout);
// The layout named by text (exactly "NCHW" or "NHWC");
// Error(kInvalidArgument) naming `what` and the accepted values otherwise.
TensorLayout parse_layout(const std::string& text, const std::string& what);

// The array shape of logical (N, C, H, W) in `layout`: (N, C, H, W) or (N, H, W, C).
core::Shape layout_shape(TensorLayout layout, int64_t N, int64_t C, int64_t H, int64_t W);
// The logical dims of a 4-d array shape in `layout`.
struct LogicalDims {
  int64_t N, C, H, W;
};
LogicalDims logical_dims(TensorLayout layout, const core::Shape& shape);

// Linear offset of element (n, c, h, w).
DT_HOST_DEVICE inline int64_t layout_offset(TensorLayout layout, int64_t n, int64_t c, int64_t h, int64_t w,
                                            int64_t C, int64_t H, int64_t W) {
  return layout == TensorLayout::kNCHW ? ((n * C + c) * H + h) * W + w : ((n * H + h) * W + w) * C + c;
}

// The channel of the element at linear offset `index` (what per-channel
// kernels, bias and batch norm, need of every element); plane = H * W.
DT_HOST_DEVICE inline int64_t layout_channel(TensorLayout layout, int64_t index, int64_t C, int64_t plane) {
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
  int64_t n, c, h, w;
  if (to == TensorLayout::kNCHW) {
    w = dst_index % W;
    h = (dst_index / W) % H;
    c = (dst_index / (W * H)) % C;
    n = dst_index / (W * H * C);
  } else {
    c = dst_index % C;
    w = (dst_index / C) % W;
    h = (dst_index / (C * W)) % H;
    n = dst_index / (C * W * H);
  }
  return layout_offset(from, n, c, h, w, C, H, W);
}

}  // namespace dt::ops
