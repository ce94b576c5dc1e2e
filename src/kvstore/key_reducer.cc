#include "kvstore/key_reducer.h"

#include "core/error.h"
#include "ops/tensor_math.h"

namespace dt::kvstore {

using core::Error;
using core::NDArray;

KeyReducer::KeyReducer(std::shared_ptr<core::Context> merge, ops::cpu::ReductionPool* cpu_sums)
    : merge_(std::move(merge)), cpu_sums_(cpu_sums) {
  if (!merge_) throw Error(core::ErrorCode::kInternal, "a key reducer without a merge context");
  if (!merge_->is_cpu()) group_reducer_ = make_gpu_group_reducer(merge_);
}

void KeyReducer::sum(const std::vector<NDArray>& values, const std::vector<size_t>& positions, const NDArray& dst,
                     NDArray& scratch) {
  if (group_reducer_ && group_reducer_->sum(values, positions, dst)) return;
  // Copies between contexts wait for the source's stream (core/copy.h).
  dst.copy_from(values[positions.front()]);
  bool read_on_merge_stream = false;
  for (size_t k = 1; k < positions.size(); ++k) {
    const NDArray& value = values[positions[k]];
    if (!core::same_device(*value.context(), *merge_)) {
      if (!scratch.defined()) scratch = NDArray::empty(merge_, dst.dtype(), dst.shape());
      scratch.copy_from(value);
      add(dst, scratch);
      continue;
    }
    if (value.context() != merge_ && !merge_->is_cpu()) {
      // Another context on the merge GPU has a stream of its own, which ours
      // does not wait for: the value may still be being written there.
      value.context()->synchronize();
      read_on_merge_stream = true;
    }
    add(dst, value);
  }
  // Nothing orders the caller's next writes to those values (on their own
  // streams) after the adds queued on ours.
  if (read_on_merge_stream) merge_->synchronize();
}

void KeyReducer::add(const NDArray& dst, const NDArray& value) {
  if (cpu_sums_ != nullptr && merge_->is_cpu()) {
    ops::add(dst, dst, value, *cpu_sums_);
  } else {
    ops::add(dst, dst, value);
  }
}

void KeyReducer::broadcast(const NDArray& src, const std::vector<NDArray>& outs, const std::vector<size_t>& positions) {
  if (group_reducer_ && group_reducer_->broadcast(src, outs, positions)) return;
  for (size_t p : positions) outs[p].copy_from(src);
}

std::shared_ptr<core::Context> gpu_for_kvstore(const std::string& store_type, int device, const std::string& instead) {
  try {
    // make_context says whether CUDA is missing from the build or the GPU from the machine.
    return core::make_context(static_cast<int>(core::DeviceType::kGpu), device);
  } catch (const Error& e) {
    throw Error(e.code(), "kvstore '" + store_type + "' reduces on a GPU: " + e.what() + "; use '" + instead + "'");
  }
}

}  // namespace dt::kvstore
