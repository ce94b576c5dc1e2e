// Splitting a batch across a trainer's replicas, as Gluon's split_and_load:
// which rows each replica takes, and each part on its replica's device.
// Pure functions; the staging buffer belongs to the caller (one per
// replica, reused from batch to batch).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>

#include "core/context.h"
#include "core/ndarray.h"

namespace dt::train {

// The rows [begin, end) of a batch of `rows` for replica r of n: split as
// evenly as possible, the first `rows % n` replicas taking one more.
std::pair<int64_t, int64_t> split_range(int64_t rows, size_t r, size_t n);

// `part` on ctx: the view itself when it is already there, else a copy into
// `staging`, kept for the next batch of the same shape.
core::NDArray on_context(const core::NDArray& part, const std::shared_ptr<core::Context>& ctx,
                         core::NDArray& staging);

}  // namespace dt::train
