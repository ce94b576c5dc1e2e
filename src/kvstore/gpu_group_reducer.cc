#include "kvstore/gpu_group_reducer.h"

#if DT_WITH_NCCL
#include "kvstore/nccl/nccl_group_reducer.h"
#endif

namespace dt::kvstore {

std::unique_ptr<GpuGroupReducer> make_gpu_group_reducer(std::shared_ptr<core::Context> merge) {
#if DT_WITH_NCCL
  return std::make_unique<NcclGroupReducer>(std::move(merge));
#else
  static_cast<void>(merge);
  return nullptr;
#endif
}

}  // namespace dt::kvstore
