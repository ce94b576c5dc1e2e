#include "kvstore/merge_gpu_placement.h"

#include <algorithm>
#include <numeric>
#include <string>

#include "core/error.h"

namespace dt::kvstore {

std::vector<int> MergeGpuPlacement::place(const std::vector<Request>& requests) {
  for (const Request& r : requests) {
    if (r.gpus.empty()) {
      throw core::Error(core::ErrorCode::kInvalidArgument,
                        "merge GPU placement: key " + std::to_string(r.key) + " has no value on a GPU");
    }
  }
  std::vector<size_t> order(requests.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return requests[a].bytes > requests[b].bytes; });
  std::vector<int> chosen(requests.size(), 0);
  for (size_t i : order) {
    const Request& r = requests[i];
    int best = r.gpus.front();
    for (int gpu : r.gpus) {
      const size_t l = load(gpu);
      const size_t best_load = load(best);
      if (l < best_load || (l == best_load && gpu < best)) best = gpu;
    }
    chosen[i] = best;
    add_load(best, r.bytes);
  }
  return chosen;
}

void MergeGpuPlacement::add_load(int device, size_t bytes) { load_[device] += bytes; }

size_t MergeGpuPlacement::load(int device) const {
  const auto it = load_.find(device);
  return it == load_.end() ? 0 : it->second;
}

}  // namespace dt::kvstore
