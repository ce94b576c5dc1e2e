#include "train/batch_split.h"

#include <algorithm>

namespace dt::train {

using core::NDArray;

std::pair<int64_t, int64_t> split_range(int64_t rows, size_t r, size_t n) {
  const int64_t base = rows / static_cast<int64_t>(n);
  const int64_t extra = rows % static_cast<int64_t>(n);
  const int64_t ri = static_cast<int64_t>(r);
  const int64_t begin = ri * base + std::min(ri, extra);
  return {begin, begin + base + (ri < extra ? 1 : 0)};
}

NDArray on_context(const NDArray& part, const std::shared_ptr<core::Context>& ctx, NDArray& staging) {
  if (core::same_device(*part.context(), *ctx)) return part;
  if (!staging.defined() || staging.shape() != part.shape() || staging.dtype() != part.dtype()) {
    staging = NDArray::empty(ctx, part.dtype(), part.shape());
  }
  staging.copy_from(part);
  return staging;
}

}  // namespace dt::train
