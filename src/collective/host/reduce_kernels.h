// The element-wise sums of the host collectives, in the dtypes they run in
// (float32, int32, int64; the 16-bit floats are widened to float32 first, see
// ops::cpu::cast). Each rank adds what it received into its own array.
#pragma once

#include <cstddef>

#include "core/dtype.h"

namespace dt::collective::host {

// dst[i] = dst[i] + src[i] for count elements, or src[i] + dst[i] when
// src_first (the two only differ in which NaN payload survives, but pinning
// the operand order makes both ends of an exchange compute the very same
// operation). dst and src must not overlap. float32 goes through
// ops::cpu::add; the integer sums wrap around.
void sum_into(core::DType dtype, void* dst, const void* src, size_t count, bool src_first);

}  // namespace dt::collective::host
