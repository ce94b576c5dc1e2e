#include "kvstore/nccl/nccl_group_reducer.h"

#include <algorithm>
#include <set>

#include "core/cuda/gpu_context.h"
#include "core/error.h"
#include "ops/tensor_math.h"

namespace dt::kvstore {

using collective::nccl::Communicator;
using core::NDArray;

namespace {

// The ranks are GPUs of this process, so no collective waits for another
// process; the deadline only ends the wait for a hung device.
constexpr double kCollectiveTimeoutS = 300;

// The arrays on `device` among arrays[p], in the order listed.
std::vector<const NDArray*> on_device(const std::vector<NDArray>& arrays, const std::vector<size_t>& positions,
                                      int device) {
  std::vector<const NDArray*> found;
  for (size_t p : positions) {
    if (arrays[p].context()->device_id() == device) found.push_back(&arrays[p]);
  }
  return found;
}

}  // namespace

NcclGroupReducer::NcclGroupReducer(std::shared_ptr<core::Context> merge) : merge_(std::move(merge)) {
  if (merge_->is_cpu()) throw core::Error(core::ErrorCode::kInternal, "NCCL reducer rooted on the CPU");
  contexts_[merge_->device_id()] = merge_;
}

std::vector<int> NcclGroupReducer::devices_of(const std::vector<NDArray>& arrays,
                                              const std::vector<size_t>& positions) const {
  std::set<int> devices;
  for (size_t p : positions) {
    if (arrays[p].context()->is_cpu()) return {};
    devices.insert(arrays[p].context()->device_id());
  }
  if (devices.size() < 2) return {};
  std::vector<int> ordered{merge_->device_id()};
  for (int d : devices) {
    if (d != merge_->device_id()) ordered.push_back(d);
  }
  return ordered;
}

std::shared_ptr<core::Context> NcclGroupReducer::context_for(int device) {
  auto it = contexts_.find(device);
  if (it == contexts_.end()) {
    it = contexts_.emplace(device, core::make_context(static_cast<int>(core::DeviceType::kGpu), device)).first;
  }
  return it->second;
}

NcclGroupReducer::Group& NcclGroupReducer::group_for(const std::vector<int>& devices) {
  auto it = groups_.find(devices);
  if (it != groups_.end()) return it->second;
  Group group;
  for (int d : devices) group.contexts.push_back(context_for(d));
  group.comms = Communicator::create_local(devices);
  return groups_.emplace(devices, std::move(group)).first->second;
}

void NcclGroupReducer::run(Group& group, const std::function<void(Communicator&, cudaStream_t)>& enqueue) {
  std::vector<Communicator*> comms;
  for (auto& c : group.comms) comms.push_back(c.get());
  collective::nccl::run_group(comms, [&] {
    for (size_t r = 0; r < comms.size(); ++r) enqueue(*comms[r], core::cuda::stream_of(*group.contexts[r]));
  });
  for (size_t r = 0; r < comms.size(); ++r) {
    comms[r]->synchronize(core::cuda::stream_of(*group.contexts[r]), kCollectiveTimeoutS);
  }
}

bool NcclGroupReducer::sum(const std::vector<NDArray>& values, const std::vector<size_t>& positions,
                           const NDArray& dst) {
  const std::vector<int> devices = devices_of(values, positions);
  if (devices.empty()) return false;
  Group& group = group_for(devices);
  // The values were written on their own contexts' streams, which ours do
  // not wait for.
  for (size_t p : positions) values[p].context()->synchronize();

  // Each rank first sums its own device's values, so that the collective
  // moves one array per GPU; the root sums into dst and reduces in place.
  std::vector<NDArray> staging(devices.size());
  std::vector<const void*> send(devices.size(), nullptr);
  for (size_t r = 0; r < devices.size(); ++r) {
    const std::vector<const NDArray*> local = on_device(values, positions, devices[r]);
    if (r == 0) {
      staging[0] = dst;
    } else if (local.size() == 1) {
      send[r] = local.front()->data();
      continue;
    } else {
      staging[r] = NDArray::empty(group.contexts[r], dst.dtype(), dst.shape());
    }
    if (local.empty()) {
      ops::fill(staging[r], 0.0);
    } else {
      staging[r].copy_from(*local.front());
      for (size_t k = 1; k < local.size(); ++k) ops::add(staging[r], staging[r], *local[k]);
    }
    send[r] = staging[r].data();
  }
  run(group, [&](Communicator& comm, cudaStream_t stream) {
    const int r = comm.rank();
    comm.reduce_sum(send[r], r == 0 ? dst.data() : nullptr, dst.size(), dst.dtype(), 0, stream);
  });
  return true;
}

bool NcclGroupReducer::broadcast(const NDArray& src, const std::vector<NDArray>& outs,
                                 const std::vector<size_t>& positions) {
  const std::vector<int> devices = devices_of(outs, positions);
  if (devices.empty()) return false;
  Group& group = group_for(devices);
  // Kernels queued on the outputs' own streams may still read them.
  for (size_t p : positions) outs[p].context()->synchronize();

  // One output per device receives; the others on that device copy from it.
  std::vector<void*> recv(devices.size(), nullptr);
  for (size_t r = 0; r < devices.size(); ++r) {
    const std::vector<const NDArray*> local = on_device(outs, positions, devices[r]);
    // The root without an output of its own broadcasts in place.
    recv[r] = local.empty() ? src.data() : local.front()->data();
  }
  run(group, [&](Communicator& comm, cudaStream_t stream) {
    const int r = comm.rank();
    comm.broadcast(r == 0 ? src.data() : nullptr, recv[r], src.size(), src.dtype(), 0, stream);
  });
  for (int device : devices) {
    const std::vector<const NDArray*> local = on_device(outs, positions, device);
    for (size_t k = 1; k < local.size(); ++k) local[k]->copy_from(*local.front());
  }
  return true;
}

}  // namespace dt::kvstore
