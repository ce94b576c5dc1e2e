// A block of device memory owned by one context. Arrays and their views share
// a Storage through shared_ptr; the memory goes back to the context's
// allocator when the last of them is gone.
#pragma once

#include <cstddef>
#include <memory>

#include "core/context.h"

namespace dt::core {

class Storage {
 public:
  // Allocates `bytes` on ctx, zero-filled when `zero` is set.
  Storage(std::shared_ptr<Context> ctx, size_t bytes, bool zero);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  const std::shared_ptr<Context>& context() const { return context_; }

 private:
  std::shared_ptr<Context> context_;
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace dt::core
