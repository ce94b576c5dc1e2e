#pragma once

#include <oneapi/dnnl/dnnl.hpp>

namespace dt::ops::cpu {

// Connects a caller's plain row-major buffer to the memory layout a oneDNN
// primitive chose for one of its arguments (format_tag::any). The reorder
// primitive and the internal buffer are created once; each call only swaps
// the caller's pointer in. When the primitive picked the plain layout itself,
// the caller's buffer is used directly and nothing is copied.
class LayoutBridge {
 public:
  enum class Direction { kInput, kOutput };

  LayoutBridge() = default;
  LayoutBridge(const dnnl::engine& engine, const dnnl::memory::desc& plain,
               const dnnl::memory::desc& internal, Direction direction);

  bool reorders() const { return reorders_; }

  // kInput: memory in the primitive's layout holding the contents of `data`.
  const dnnl::memory& input(const void* data, const dnnl::stream& stream);

  // kOutput: memory for the primitive to write; commit() then moves what it
  // wrote into `data`.
  const dnnl::memory& output(void* data);
  void commit(const dnnl::stream& stream);

 private:
  dnnl::memory user_;
  dnnl::memory internal_;
  dnnl::reorder reorder_;
  bool reorders_ = false;
};

}  // namespace dt::ops::cpu
