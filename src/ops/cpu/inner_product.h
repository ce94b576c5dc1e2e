#pragma once

#include <cstdint>
#include <memory>

#include "ops/cpu/cpu_engine.h"
#include "ops/inner_product.h"

namespace dt::ops::cpu {

// ops::InnerProduct on oneDNN, float32 throughout. A moved-from object may
// only be destroyed or assigned to.
class InnerProduct final : public ops::InnerProduct {
 public:
  InnerProduct(const CpuEngine& engine, const InnerProductParams& params);
  InnerProduct(InnerProduct&&) noexcept;
  InnerProduct& operator=(InnerProduct&&) noexcept;
  ~InnerProduct() override;

  const InnerProductParams& params() const;

  void forward(const void* x, const void* w, const float* b, void* y) override;
  void backward_data(const void* dy, const void* w, void* dx) override;
  void backward_weights(const void* x, const void* dy, void* dw, float* db) override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dt::ops::cpu
