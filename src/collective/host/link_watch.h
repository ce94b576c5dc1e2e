// What one rank's collectives block on now, for the stall inspector
// (core/stall_watch.h; the allreduce kvstore's companion,
// kvstore/host/allreduce_stall_watch.h, reads it): the communicator notes
// each call as it starts and the rendezvous while it meets its peers; each
// link (PeerStream) the receive it blocks on until the peer's bytes come,
// and the send it blocks on until the peer takes them (a stopped peer reads
// nothing, so once the socket's buffers are full a send waits on it too). A
// probe on another thread reads the note.
//
// The plain path knows nothing of stalls: it writes this note, which is all
// the hook there is, and nothing at all when no watch is installed
// (HostCommunicatorOptions::link_watch null). The cost is one uncontended
// lock per wait (a ring chunk, not an element).
//
// Threading: the thread running the collectives writes, any thread reads;
// one small lock.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>

#include "collective/host/call_header.h"

namespace dt::collective::host {

class LinkWatch {
 public:
  enum class Direction { kReceive, kSend };

  // The wait a rank blocks on.
  struct Waiting {
    uint64_t id = 0;        // the same while this wait lasts; a new one per wait
    int peer = -1;          // the communicator rank it waits on; -1: the rendezvous (any rank)
    std::string what;       // "all_reduce (ring reduce-scatter)"
    CallHeader call;        // the call in progress (seq 0: none yet)
    Direction direction = Direction::kReceive;
  };

  // The communicator started a call: the waits that follow belong to it.
  void call_started(const CallHeader& call);
  // A wait started / ended; what must be a string that outlives the wait (a
  // literal: every caller passes one).
  void waiting(int peer, const char* what, Direction direction = Direction::kReceive);
  void done();
  // The wait open now, if any.
  std::optional<Waiting> now() const;

  // Notes a wait for its scope; a null watch notes nothing.
  class Scope {
   public:
    Scope(LinkWatch* watch, int peer, const char* what, Direction direction = Direction::kReceive)
        : watch_(watch) {
      if (watch_ != nullptr) watch_->waiting(peer, what, direction);
    }
    ~Scope() {
      if (watch_ != nullptr) watch_->done();
    }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    LinkWatch* const watch_;
  };

 private:
  mutable std::mutex mutex_;
  CallHeader call_;
  uint64_t waits_ = 0;  // waits started so far: the open one's id
  bool waiting_ = false;
  int peer_ = -1;
  const char* what_ = "";
  Direction direction_ = Direction::kReceive;
};

// "ring all-reduce call 17 (bucket from key 3, 1024 elements)", for a log.
std::string call_text(const CallHeader& call);

}  // namespace dt::collective::host
