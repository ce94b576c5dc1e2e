#include "kvstore/completion.h"

namespace dt::kvstore {

void Completion::finish(std::optional<core::Error> error) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (done_) return;
    done_ = true;
    error_ = std::move(error);
  }
  cv_.notify_all();
}

bool Completion::done() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return done_;
}

bool Completion::wait_for(std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lock(mutex_);
  return cv_.wait_for(lock, timeout, [this] { return done_; });
}

std::optional<core::Error> Completion::error() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return error_;
}

}  // namespace dt::kvstore
