// What one thread blocks on now, for the stall inspector (stall_watch.h):
// the waiting code notes a wait as it starts and ends it (Scope), a probe on
// the watch's thread reads it. For waits that cannot tell whom they wait
// for (an NCCL collective polled from the host: the GPU kernel waits, NCCL
// does not say on which peer), so the watch names what the scheduler's news
// says, if anything.
//
// Threading: one thread notes, any thread reads; one small lock.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "core/stall_watch.h"

namespace dt::core {

class WaitNote {
 public:
  void waiting(std::string what);
  void done();
  // The wait open now, if any, as the watch's OpenWait (its id changes with
  // each wait), naming waits_for.
  std::vector<OpenWait> open(const std::vector<int>& waits_for) const;

  // Notes a wait for its scope.
  class Scope {
   public:
    Scope(WaitNote& note, std::string what) : note_(note) { note_.waiting(std::move(what)); }
    ~Scope() { note_.done(); }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    WaitNote& note_;
  };

 private:
  mutable std::mutex mutex_;
  uint64_t waits_ = 0;  // waits started so far: the open one's id
  bool waiting_ = false;
  std::string what_;
};

}  // namespace dt::core
