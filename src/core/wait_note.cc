#include "core/wait_note.h"

#include <utility>

namespace dt::core {

void WaitNote::waiting(std::string what) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++waits_;
  waiting_ = true;
  what_ = std::move(what);
}

void WaitNote::done() {
  std::lock_guard<std::mutex> lock(mutex_);
  waiting_ = false;
}

std::vector<OpenWait> WaitNote::open(const std::vector<int>& waits_for) const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!waiting_) return {};
  return {OpenWait{"wait " + std::to_string(waits_), what_, waits_for}};
}

}  // namespace dt::core
