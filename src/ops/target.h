// Where an op runs, as the factories of ops/ (inner_product.h, conv2d.h,
// pooling.h, batch_norm.h, eltwise.h, softmax_cross_entropy.h, dropout.h)
// take it: the device of its activations, their dtype, and on the CPU the
// oneDNN engine its kernels execute on. Each factory picks the CPU
// implementation (ops/cpu, on oneDNN) or the GPU one (ops/cuda) from it, so
// that callers hold one op and never ask which build they are in. The engine
// is only declared here: choosing a device does not include oneDNN.
#pragma once

#include <memory>

#include "core/context.h"
#include "core/dtype.h"

namespace dt::ops {

namespace cpu {
class CpuEngine;
}  // namespace cpu

struct Target {
  std::shared_ptr<core::Context> context;
  // Of the activations (and the weights read in the compute dtype):
  // float32 on the CPU, float32, float16 or bfloat16 on a GPU.
  core::DType dtype = core::DType::kFloat32;
  // Required for the CPU kernels that run on oneDNN; not used on a GPU.
  const cpu::CpuEngine* engine = nullptr;

  bool on_gpu() const;
};

namespace detail {

// The engine of a CPU target; Error(kBadState) when it has none.
const cpu::CpuEngine& cpu_engine(const Target& target);
// Error(kInternal): a GPU target reached a build without CUDA, where no GPU
// context can exist.
[[noreturn]] void throw_no_cuda(const char* op);

}  // namespace detail

}  // namespace dt::ops
