// Sums and broadcasts over the GPUs of this process, for the in-process
// kvstores: one key's values (or pull outputs) spread over several GPUs are
// reduced to, or filled from, the store's copy on its merge GPU by one
// collective instead of a chain of peer copies. An interface, so that the
// kvstores compile in builds without the collective library.
#pragma once

#include <memory>
#include <vector>

#include "core/context.h"
#include "core/ndarray.h"

namespace dt::kvstore {

class GpuGroupReducer {
 public:
  virtual ~GpuGroupReducer() = default;

  // dst (on the merge GPU) = the sum of values[p] for p in positions.
  // Returns false, touching nothing, when the values are not all on GPUs or
  // live on fewer than two of them: the caller's own sum serves those.
  virtual bool sum(const std::vector<core::NDArray>& values, const std::vector<size_t>& positions,
                   const core::NDArray& dst) = 0;
  // outs[p] = src (on the merge GPU) for p in positions; false as above.
  virtual bool broadcast(const core::NDArray& src, const std::vector<core::NDArray>& outs,
                         const std::vector<size_t>& positions) = 0;
};

// The NCCL reducer rooted at merge (a GPU context); nullptr in a build
// without NCCL.
std::unique_ptr<GpuGroupReducer> make_gpu_group_reducer(std::shared_ptr<core::Context> merge);

}  // namespace dt::kvstore
