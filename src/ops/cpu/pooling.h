#pragma once

#include <cstdint>
#include <memory>

#include "ops/cpu/cpu_engine.h"
#include "ops/pooling.h"

namespace dt::ops::cpu {

// The ops:: pooling interfaces over float32 on the CPU. Max pooling: plain
// loops parallelised over planes with num_threads() of the engine. A
// moved-from object (here and below) may only be destroyed or assigned to.
class MaxPool2D final : public ops::MaxPool2D {
 public:
  MaxPool2D(const CpuEngine& engine, const Pool2DParams& params);
  ~MaxPool2D() override;
  MaxPool2D(MaxPool2D&&) noexcept;
  MaxPool2D& operator=(MaxPool2D&&) noexcept;

  const Pool2DParams& params() const;
  void forward_training(const void* x, void* y) override;
  void forward_inference(const void* x, void* y) override;
  void backward(const void* dy, void* dx) override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Average pooling on oneDNN.
class AvgPool2D final : public ops::AvgPool2D {
 public:
  AvgPool2D(const CpuEngine& engine, const Pool2DParams& params, bool count_include_pad);
  ~AvgPool2D() override;
  AvgPool2D(AvgPool2D&&) noexcept;
  AvgPool2D& operator=(AvgPool2D&&) noexcept;

  const Pool2DParams& params() const;
  void forward(const void* x, void* y) override;
  void backward(const void* dy, void* dx) override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Mean over H and W. Plain loops, as for max pooling.
class GlobalAvgPool2D final : public ops::GlobalAvgPool2D {
 public:
  GlobalAvgPool2D(const CpuEngine& engine, int64_t N, int64_t C, int64_t H, int64_t W,
                  TensorLayout layout = TensorLayout::kNCHW);

  void forward(const void* x, void* y) const override;
  void backward(const void* dy, void* dx) const override;

 private:
  int threads_;
  int64_t rows_;   // N * C
  int64_t plane_;  // H * W
  int64_t channels_;
  TensorLayout layout_;
};

}  // namespace dt::ops::cpu
