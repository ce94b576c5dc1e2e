// Which elements an inverted-dropout mask keeps: a counter-based draw, so
// element i's fate depends on (key, i) alone, not on the order elements are
// visited in. The CPU loop and the GPU kernel (ops/cuda/dropout.h) both call
// this one function, so a GPU net drops exactly the elements a CPU net does.
#pragma once

#include <cstdint>

#include "core/splitmix64.h"

namespace dt::ops {

// 53 bits of mix64 give a uniform u in [0, 1), exactly representable as a
// double on host and device alike; the element survives when u >= rate.
DT_HOST_DEVICE inline bool dropout_keeps(uint64_t key, uint64_t index, double rate) {
  const double u = static_cast<double>(core::mix64(key + index * 0xd1b54a32d192ed03ULL) >> 11) * 0x1.0p-53;
  return u >= rate;
}

}  // namespace dt::ops
