// NHWC on the GPU: the layout conversion kernel against the CPU one (the
// same bits, it only moves them), in every dtype a net's activations use.
// Without a visible device the program reports a skip (exit code 77).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "core/context.h"
#include "core/cuda/gpu_context.h"
#include "core/dtype.h"
#include "core/ndarray.h"
#include "ops/layout_convert.h"

namespace dt {
namespace {

using core::DType;
using core::NDArray;
using ops::TensorLayout;

TEST(GpuLayout, ConversionMatchesTheCpuBitForBit) {
  auto cpu = core::make_cpu_context();
  auto gpu = core::cuda::make_gpu_context(0);
  std::mt19937 gen(38);
  for (const DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    const ops::LogicalDims d{3, 5, 7, 9};
    NDArray x = NDArray::empty(cpu, dtype, ops::layout_shape(TensorLayout::kNCHW, d.N, d.C, d.H, d.W));
    auto* bytes = static_cast<unsigned char*>(x.data());
    for (size_t i = 0; i < x.nbytes(); ++i) bytes[i] = static_cast<unsigned char>(gen());
    const core::Shape nhwc_shape = ops::layout_shape(TensorLayout::kNHWC, d.N, d.C, d.H, d.W);
    NDArray want = NDArray::empty(cpu, dtype, nhwc_shape);
    ops::convert_layout(want, TensorLayout::kNHWC, x, TensorLayout::kNCHW);

    NDArray gx = NDArray::empty(gpu, dtype, x.shape());
    gx.copy_from_host(x.data(), x.nbytes());
    NDArray gy = NDArray::empty(gpu, dtype, nhwc_shape);
    NDArray gback = NDArray::empty(gpu, dtype, x.shape());
    ops::convert_layout(gy, TensorLayout::kNHWC, gx, TensorLayout::kNCHW);
    ops::convert_layout(gback, TensorLayout::kNCHW, gy, TensorLayout::kNHWC);
    std::vector<unsigned char> got(want.nbytes()), back(x.nbytes());
    gy.copy_to_host(got.data(), got.size());
    gback.copy_to_host(back.data(), back.size());
    EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size()), 0) << core::dtype_name(dtype);
    EXPECT_EQ(std::memcmp(back.data(), x.data(), back.size()), 0) << core::dtype_name(dtype);
  }
}

}  // namespace
}  // namespace dt
