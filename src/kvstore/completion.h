// The outcome of one asynchronous kvstore request (MXNet's engine var, a
// future without a value): it finishes exactly once, with success or with
// the error that ended the request, and any thread may wait for it with a
// bound. The kvstore that issued it decides how long a wait may take
// (KVStore::wait); this class only records and signals.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>

#include "core/error.h"

namespace dt::kvstore {

class Completion {
 public:
  Completion() = default;
  Completion(const Completion&) = delete;
  Completion& operator=(const Completion&) = delete;

  // The first call wins; later ones are ignored (a request that failed on one
  // server stays failed when another server answers).
  void finish(std::optional<core::Error> error = std::nullopt);
  bool done() const;
  // True once finished; false when timeout passed first.
  bool wait_for(std::chrono::milliseconds timeout) const;
  // The error it finished with; empty while pending or on success.
  std::optional<core::Error> error() const;

 private:
  mutable std::mutex mutex_;
  mutable std::condition_variable cv_;
  bool done_ = false;
  std::optional<core::Error> error_;
};

}  // namespace dt::kvstore
