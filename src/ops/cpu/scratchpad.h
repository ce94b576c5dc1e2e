#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include <cstddef>

namespace dt::ops::cpu {

// One scratch buffer shared by the primitives of a kernel, which run one
// after another. Primitives are created with user_attr() so that oneDNN does
// not allocate scratch memory on every execution.
class Scratchpad {
 public:
  static dnnl::primitive_attr user_attr();

  // Grows the requirement to cover `pd`; call for each primitive before
  // allocate().
  void reserve(const dnnl::primitive_desc_base& pd);
  void allocate(const dnnl::engine& engine);

  const dnnl::memory& memory() const { return memory_; }

 private:
  size_t bytes_ = 0;
  dnnl::memory memory_;
};

}  // namespace dt::ops::cpu
