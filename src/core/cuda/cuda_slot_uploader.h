// The SlotUploader of a GPU context (core/slot_uploader.h): page-locked host
// slots (pageable ones, with a warning on the log, when the driver refuses),
// a copy stream of its own and two events per slot, "copied" (recorded on
// the copy stream after a slot's copies) and "released" (recorded on the
// target's stream when the consumer lets go of the slot's device memory).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/context.h"
#include "core/cuda/cuda_event.h"
#include "core/cuda/cuda_stream.h"
#include "core/cuda/pinned_buffer.h"
#include "core/slot_uploader.h"

namespace dt::core::cuda {

class CudaSlotUploader final : public SlotUploader {
 public:
  // target must be a GPU context (Error(kInternal) otherwise);
  // Error(kInvalidArgument) for no slots or no parts.
  CudaSlotUploader(std::shared_ptr<Context> target, size_t slots, const std::vector<size_t>& part_bytes);
  // Waits for the copy stream before the host memory and events go.
  ~CudaSlotUploader() override;

  void* host(size_t slot, size_t part) override;
  bool pinned() const override { return pinned_; }
  void wait_host_free(size_t slot) override;
  void upload(size_t slot, const std::vector<void*>& device, const std::vector<size_t>& bytes) override;
  void use_after_upload(size_t slot) override;
  void release(size_t slot) override;

 private:
  // Host memory of one part: page-locked, else pageable.
  struct HostPart {
    PinnedBuffer pinned{0};
    std::vector<uint8_t> pageable;
    void* data = nullptr;
  };
  struct Slot {
    std::vector<HostPart> parts;
    std::unique_ptr<CudaEvent> copied;
    std::unique_ptr<CudaEvent> released;
  };
  Slot& slot_at(size_t slot);

  const std::shared_ptr<Context> target_;
  const std::vector<size_t> part_bytes_;
  bool pinned_ = true;
  CudaStream copy_stream_;
  std::vector<Slot> slots_;
};

}  // namespace dt::core::cuda
