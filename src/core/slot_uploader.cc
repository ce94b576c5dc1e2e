#include "core/slot_uploader.h"

#include "core/error.h"
#if DT_WITH_CUDA
#include "core/cuda/cuda_slot_uploader.h"
#endif

namespace dt::core {

std::unique_ptr<SlotUploader> make_slot_uploader(const std::shared_ptr<Context>& target, size_t slots,
                                                 const std::vector<size_t>& part_bytes) {
  require(target != nullptr, ErrorCode::kInvalidArgument, "a slot uploader needs a target context, got null");
  if (target->is_cpu()) return nullptr;
#if DT_WITH_CUDA
  return std::make_unique<cuda::CudaSlotUploader>(target, slots, part_bytes);
#else
  static_cast<void>(slots);
  static_cast<void>(part_bytes);
  throw Error(ErrorCode::kNotSupported, "staging batches for " + target->to_string() + " in a build without CUDA");
#endif
}

}  // namespace dt::core
