#include "core/timeline/event_ring.h"

#include "core/error.h"

namespace dt::core::timeline {

EventRing::EventRing(size_t capacity) {
  if (capacity == 0) throw Error(ErrorCode::kInvalidArgument, "a timeline needs room for at least one event");
  slots_.resize(capacity);
}

void EventRing::push(const TraceEvent& event) {
  std::lock_guard<std::mutex> lock(mutex_);
  slots_[next_] = event;
  next_ = (next_ + 1) % slots_.size();
  if (count_ < slots_.size()) {
    ++count_;
  } else {
    ++dropped_;
  }
}

std::vector<TraceEvent> EventRing::snapshot() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<TraceEvent> events;
  events.reserve(count_);
  const size_t first = (next_ + slots_.size() - count_) % slots_.size();
  for (size_t i = 0; i < count_; ++i) events.push_back(slots_[(first + i) % slots_.size()]);
  return events;
}

uint64_t EventRing::dropped() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return dropped_;
}

void EventRing::clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  next_ = count_ = 0;
  dropped_ = 0;
}

}  // namespace dt::core::timeline
