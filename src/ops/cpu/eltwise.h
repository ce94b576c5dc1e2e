#pragma once

#include <cstdint>
#include <memory>

#include "ops/cpu/cpu_engine.h"
#include "ops/eltwise.h"

namespace dt::ops::cpu {

// ops::Eltwise on oneDNN over `count` contiguous floats. A moved-from object
// may only be destroyed or assigned to.
class Eltwise final : public ops::Eltwise {
 public:
  Eltwise(const CpuEngine& engine, Activation kind, int64_t count);
  ~Eltwise() override;
  Eltwise(Eltwise&&) noexcept;
  Eltwise& operator=(Eltwise&&) noexcept;

  Activation kind() const;
  int64_t count() const;

  void forward(const void* x, void* y) override;
  void backward(const void* y, const void* dy, void* dx) override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dt::ops::cpu
