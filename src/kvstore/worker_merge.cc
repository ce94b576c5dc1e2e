#include "kvstore/worker_merge.h"

#include "core/timeline/timeline.h"

namespace dt::kvstore {

using core::NDArray;

namespace {

std::unique_ptr<ops::cpu::ReductionPool> pool_for(const core::Context& merge,
                                                  const ops::cpu::ReductionSettings& reduction) {
  if (!merge.is_cpu()) return nullptr;
  return std::make_unique<ops::cpu::ReductionPool>(reduction);
}

}  // namespace

std::unique_ptr<WorkerMerge> WorkerMerge::on_host(const ops::cpu::ReductionSettings& reduction) {
  return std::unique_ptr<WorkerMerge>(new WorkerMerge(false, core::make_cpu_context(), reduction));
}

std::unique_ptr<WorkerMerge> WorkerMerge::on_device(std::shared_ptr<core::Context> merge,
                                                    const ops::cpu::ReductionSettings& reduction) {
  return std::unique_ptr<WorkerMerge>(new WorkerMerge(true, std::move(merge), reduction));
}

WorkerMerge::WorkerMerge(bool on_device, std::shared_ptr<core::Context> merge,
                         const ops::cpu::ReductionSettings& reduction)
    : on_device_(on_device), cpu_sums_(pool_for(*merge, reduction)), reducer_(std::move(merge), cpu_sums_.get()) {}

const NDArray& WorkerMerge::merged(Buffers& buffers) const {
  if (!buffers.merged.defined()) {
    buffers.merged = NDArray::empty(reducer_.merge_context(), buffers.host.dtype(), buffers.host.shape());
  }
  return buffers.merged;
}

const uint8_t* WorkerMerge::push_source(Buffers& buffers, const std::vector<NDArray>& values,
                                        const std::vector<size_t>& positions) {
  const NDArray& first = values[positions.front()];
  if (positions.size() == 1) {
    if (first.context()->is_cpu()) return static_cast<const uint8_t*>(first.data());
    buffers.host.copy_from(first);
    return static_cast<const uint8_t*>(buffers.host.data());
  }
  const core::timeline::Span span("kvstore", "merge", {"replicas", static_cast<int64_t>(positions.size())});
  std::lock_guard<std::mutex> lock(mutex_);
  if (on_device_) {
    reducer_.sum(values, positions, merged(buffers), buffers.scratch);
    buffers.host.copy_from(buffers.merged);
  } else {
    reducer_.sum(values, positions, buffers.host, buffers.scratch);
  }
  return static_cast<const uint8_t*>(buffers.host.data());
}

uint8_t* WorkerMerge::pull_target(Buffers& buffers, const std::vector<NDArray>& outs) {
  const NDArray& first = outs.front();
  return static_cast<uint8_t*>(first.context()->is_cpu() ? first.data() : buffers.host.data());
}

void WorkerMerge::spread(Buffers& buffers, const std::vector<NDArray>& outs) {
  const NDArray& first = outs.front();
  const bool landed_in_first = first.context()->is_cpu();
  if (!on_device_ || outs.size() == 1) {
    if (!landed_in_first) first.copy_from(buffers.host);
    for (size_t k = 1; k < outs.size(); ++k) outs[k].copy_from(first);
    return;
  }
  const core::timeline::Span span("kvstore", "spread", {"replicas", static_cast<int64_t>(outs.size())});
  std::vector<size_t> positions;
  for (size_t k = landed_in_first ? 1 : 0; k < outs.size(); ++k) positions.push_back(k);
  std::lock_guard<std::mutex> lock(mutex_);
  merged(buffers).copy_from(landed_in_first ? first : buffers.host);
  reducer_.broadcast(buffers.merged, outs, positions);
}

}  // namespace dt::kvstore
