#include "ops/cpu/layout_convert.h"

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

namespace dt::ops::cpu {
namespace {

template <typename T>
void gather(T* dst, TensorLayout to, const T* src, TensorLayout from, const LogicalDims& d) {
  const int64_t count = d.N * d.C * d.H * d.W;
  for (int64_t i = 0; i < count; ++i) dst[i] = src[layout_source_offset(i, to, from, d.C, d.H, d.W)];
}

}  // namespace

void convert_layout(void* dst, TensorLayout to, const void* src, TensorLayout from, const LogicalDims& dims,
                    size_t element_size) {
  if (to == from) {
    std::memcpy(dst, src, static_cast<size_t>(dims.N * dims.C * dims.H * dims.W) * element_size);
    return;
  }
  switch (element_size) {
    case 1:
      return gather(static_cast<uint8_t*>(dst), to, static_cast<const uint8_t*>(src), from, dims);
    case 2:
      return gather(static_cast<uint16_t*>(dst), to, static_cast<const uint16_t*>(src), from, dims);
    case 4:
      return gather(static_cast<uint32_t*>(dst), to, static_cast<const uint32_t*>(src), from, dims);
    case 8:
      return gather(static_cast<uint64_t*>(dst), to, static_cast<const uint64_t*>(src), from, dims);
    default:
      throw std::invalid_argument("convert_layout: element size " + std::to_string(element_size) +
                                  " is not 1, 2, 4 or 8");
  }
}

}  // namespace dt::ops::cpu
