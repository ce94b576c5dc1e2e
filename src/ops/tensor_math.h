// Whole-array arithmetic on NDArrays (fill, add, scale, axpy, cast): checks
// arguments once, then hands raw pointers to the CPU or CUDA kernel for the
// array's context.
#pragma once

#include "core/ndarray.h"

namespace dt::ops {

namespace cpu {
class ReductionPool;
}

// Every element = value converted to the array's dtype (integers round to
// nearest; out-of-range or NaN for an integer dtype is Error(kInvalidArgument)).
void fill(const core::NDArray& arr, double value);
// out = a + b; floating dtypes; all three of one dtype, shape and context.
void add(const core::NDArray& out, const core::NDArray& a, const core::NDArray& b);
// The same, a CPU sum on pool's threads (in ranges: the same bits); GPU
// arrays as above.
void add(const core::NDArray& out, const core::NDArray& a, const core::NDArray& b, cpu::ReductionPool& pool);
// arr *= alpha
void scale(const core::NDArray& arr, double alpha);
// y += alpha * x
void axpy(const core::NDArray& y, double alpha, const core::NDArray& x);
// dst = src converted to dst's dtype; same shape and context.
void cast(const core::NDArray& dst, const core::NDArray& src);

}  // namespace dt::ops
