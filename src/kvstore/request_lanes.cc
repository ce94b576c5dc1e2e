#include "kvstore/request_lanes.h"

namespace dt::kvstore {

namespace {

// Tensor bytes per message: big enough to amortise the per-message cost,
// small enough that parts pipeline and no buffer hits glibc's mmap path.
constexpr size_t kBatchBytes = ps::KeyPlacement::kDefaultPartBytes;

size_t bytes_of(const RequestPart& part) {
  return static_cast<size_t>(part.range.end - part.range.begin) * core::dtype_size(part.dtype);
}

}  // namespace

RequestLanes::RequestLanes(int num_servers, int window)
    : window_(window), lanes_(2 * static_cast<size_t>(num_servers)) {}

void RequestLanes::queue(size_t lane, LaneUnit unit) {
  const int64_t order = -static_cast<int64_t>(unit.priority);
  lanes_.at(lane).queued.emplace(std::make_pair(order, next_sequence_++), std::move(unit));
}

bool RequestLanes::ready(size_t lane) const {
  const Lane& l = lanes_[lane];
  return l.in_flight < window_ && !l.queued.empty();
}

bool RequestLanes::idle(int server) const {
  const Lane& pushes = lanes_[push_lane(server)];
  const Lane& pulls = lanes_[pull_lane(server)];
  return pushes.queued.empty() && pulls.queued.empty() && pulls.in_flight < window_;
}

std::vector<LaneUnit> RequestLanes::take_message(size_t lane) {
  Lane& l = lanes_[lane];
  std::vector<LaneUnit> units;
  size_t bytes = 0;
  const ps::wire::DataOp op = l.queued.begin()->second.op;
  for (auto it = l.queued.begin(); it != l.queued.end();) {
    const size_t size = bytes_of(it->second.part);
    if (it->second.op != op || (!units.empty() && bytes + size > kBatchBytes)) {
      ++it;
      continue;
    }
    bytes += size;
    units.push_back(std::move(it->second));
    it = l.queued.erase(it);
    if (bytes >= kBatchBytes) break;
  }
  ++l.in_flight;
  return units;
}

bool RequestLanes::answered(size_t lane) {
  Lane& l = lanes_[lane];
  --l.in_flight;
  return !l.queued.empty();
}

std::vector<LaneUnit> RequestLanes::take_queued(int server) {
  std::vector<LaneUnit> units;
  for (size_t lane : {push_lane(server), pull_lane(server)}) {
    for (auto& [order, unit] : lanes_[lane].queued) units.push_back(std::move(unit));
    lanes_[lane].queued.clear();
  }
  return units;
}

std::vector<LaneUnit> RequestLanes::take_all() {
  std::vector<LaneUnit> units;
  for (Lane& lane : lanes_) {
    for (auto& [order, unit] : lane.queued) units.push_back(std::move(unit));
    lane.queued.clear();
  }
  return units;
}

}  // namespace dt::kvstore
