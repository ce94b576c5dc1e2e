#include "core/cuda/cuda_slot_uploader.h"

#include <string>
#include <utility>

#include "core/cuda/cuda_check.h"
#include "core/cuda/device_guard.h"
#include "core/cuda/gpu_context.h"
#include "core/error.h"
#include "core/log.h"

namespace dt::core::cuda {

namespace {

int device_of(const std::shared_ptr<Context>& target) {
  require(target != nullptr && !target->is_cpu(), ErrorCode::kInternal,
          "a CUDA slot uploader was asked for " + (target ? target->to_string() : std::string("no context")));
  return target->device_id();
}

}  // namespace

CudaSlotUploader::CudaSlotUploader(std::shared_ptr<Context> target, size_t slots, const std::vector<size_t>& part_bytes)
    : target_(std::move(target)), part_bytes_(part_bytes), copy_stream_(device_of(target_)) {
  require(slots > 0 && !part_bytes.empty(), ErrorCode::kInvalidArgument,
          "a slot uploader needs at least one slot of at least one part");
  slots_.resize(slots);
  for (Slot& slot : slots_) {
    slot.copied = std::make_unique<CudaEvent>(target_->device_id());
    slot.released = std::make_unique<CudaEvent>(target_->device_id());
    slot.parts.resize(part_bytes_.size());
    for (size_t p = 0; p < part_bytes_.size(); ++p) {
      HostPart& part = slot.parts[p];
      if (pinned_) {
        try {
          part.pinned = PinnedBuffer(part_bytes_[p]);
          part.data = part.pinned.data();
          continue;
        } catch (const Error& e) {
          // Page-locked memory is a limited resource (ulimit -l, a
          // container's cap): staging still works from pageable memory,
          // only the copies no longer overlap the step as well.
          if (e.code() != ErrorCode::kOutOfMemory && e.code() != ErrorCode::kCuda) throw;
          log(LogLevel::kWarning, "loader",
              "page-locked host memory for staging batches to " + target_->to_string() + " was refused (" + e.what() +
                  "); staging from pageable memory, the copies will overlap the step less");
          pinned_ = false;
          // The slots already pinned stay pinned; this and later parts are pageable.
        }
      }
      part.pageable.resize(part_bytes_[p]);
      part.data = part.pageable.data();
    }
  }
}

CudaSlotUploader::~CudaSlotUploader() {
  try {
    copy_stream_.synchronize();
  } catch (const Error&) {
    // The device is gone; its copies went with it.
  }
}

CudaSlotUploader::Slot& CudaSlotUploader::slot_at(size_t slot) {
  require(slot < slots_.size(), ErrorCode::kInternal,
          "staging slot " + std::to_string(slot) + " of " + std::to_string(slots_.size()));
  return slots_[slot];
}

void* CudaSlotUploader::host(size_t slot, size_t part) {
  Slot& s = slot_at(slot);
  require(part < s.parts.size(), ErrorCode::kInternal, "staging part " + std::to_string(part));
  return s.parts[part].data;
}

void CudaSlotUploader::wait_host_free(size_t slot) { slot_at(slot).copied->synchronize(); }

void CudaSlotUploader::upload(size_t slot, const std::vector<void*>& device, const std::vector<size_t>& bytes) {
  Slot& s = slot_at(slot);
  require(device.size() == s.parts.size() && bytes.size() == s.parts.size(), ErrorCode::kInternal,
          "an upload names " + std::to_string(device.size()) + " parts of a slot of " + std::to_string(s.parts.size()));
  const cudaStream_t copy = copy_stream_.get();
  DeviceGuard guard(target_->device_id());
  s.released->make_wait(copy);
  for (size_t p = 0; p < s.parts.size(); ++p) {
    require(bytes[p] <= part_bytes_[p], ErrorCode::kInternal,
            "an upload of " + std::to_string(bytes[p]) + " bytes into a part of " + std::to_string(part_bytes_[p]));
    if (bytes[p] > 0) DT_CUDA_CHECK(cudaMemcpyAsync(device[p], s.parts[p].data, bytes[p], cudaMemcpyHostToDevice, copy));
  }
  s.copied->record(copy);
}

void CudaSlotUploader::use_after_upload(size_t slot) { slot_at(slot).copied->make_wait(stream_of(*target_)); }

void CudaSlotUploader::release(size_t slot) { slot_at(slot).released->record(stream_of(*target_)); }

}  // namespace dt::core::cuda
