// One link of the host communicator's mesh: an nng byte stream to one peer
// rank, with one send and one receive that may be in flight at the same time
// (full duplex), both straight from and into the caller's memory.
//
// nng completes a stream operation after a single sendmsg/readv, so large
// transfers finish in several pieces. The two directions are driven
// differently on purpose:
//  - a send continues from its aio callback (nng's task threads), so it keeps
//    draining while the calling thread is busy receiving or adding, and two
//    ranks that send to each other at once never wait on one another;
//  - a receive has no callback: the calling thread waits on it and re-posts
//    the rest itself, which saves a thread hop per completion on the latency
//    path (nng finishes a callback-less aio in the thread that completed it).
// Every operation has a deadline of timeout_s from its start: Error(kTimedOut)
// naming the operation and the peer. A stream that closes or breaks is
// Error(kPeerLost) naming the peer's rank.
//
// Threads: one thread drives the transfers; close() may be called from any
// thread and fails whatever is in flight at once.
#pragma once

#include <nng/nng.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <string>
#include <vector>

#include "collective/host/link_watch.h"
#include "core/traffic.h"

namespace dt::collective::host {

class PeerStream {
 public:
  // Takes ownership of stream. peer: the rank at the other end (-1 while
  // unknown, during the mesh handshake).
  PeerStream(nng_stream* stream, int peer, double timeout_s);
  ~PeerStream();
  PeerStream(const PeerStream&) = delete;
  PeerStream& operator=(const PeerStream&) = delete;

  int peer() const { return peer_; }
  void set_peer(int peer) { peer_ = peer; }

  // Starts sending head (head_bytes, may be 0) followed by data (bytes, may
  // be 0); both must stay valid and unchanged until wait_send() returns. At
  // most one send is in flight.
  void start_send(const void* head, size_t head_bytes, const void* data, size_t bytes);
  // Waits for the send; throws (see above), `what` names the operation.
  void wait_send(const char* what);

  // Starts receiving exactly bytes into data; at most one receive in flight.
  void start_recv(void* data, size_t bytes);
  void wait_recv(const char* what);
  void recv(void* data, size_t bytes, const char* what) {
    start_recv(data, bytes);
    wait_recv(what);
  }

  // The stall inspector's note of what this link's sends and receives wait
  // for (link_watch.h); null, the default, notes nothing. Set before any
  // transfer; watch must outlive the stream.
  void set_link_watch(LinkWatch* watch) { link_watch_ = watch; }

  // Fails the transfers in flight and every later one with NNG_ECLOSED; the
  // peer sees the link close. Any thread; idempotent.
  void close();

  // Bytes that went out and came in on this link.
  core::Traffic traffic() const { return traffic_.read(); }

 private:
  using Clock = std::chrono::steady_clock;
  static void on_send(void* arg);
  // Posts the unsent part of the send; called with send_mu_ held.
  void post_send_locked();
  // Milliseconds left until deadline, at least 1 (0 when it has passed).
  static nng_duration ms_left(Clock::time_point deadline);
  [[noreturn]] void throw_failure(int rv, const char* what, const char* direction) const;

  nng_stream* stream_;
  int peer_;
  // Set by close(): tells our own closing from the peer's (nng reports a
  // write to a socket the peer closed, EPIPE, as NNG_ECLOSED too).
  std::atomic<bool> closed_here_{false};
  std::chrono::nanoseconds timeout_;
  nng_aio* send_aio_ = nullptr;
  nng_aio* recv_aio_ = nullptr;

  // Send: the callback advances these.
  std::mutex send_mu_;
  std::condition_variable send_cv_;
  nng_iov send_iov_[2] = {};
  unsigned send_niov_ = 0;
  size_t send_left_ = 0;
  bool send_busy_ = false;
  int send_rv_ = 0;
  Clock::time_point send_deadline_;

  // Receive: only the driving thread touches these.
  uint8_t* recv_ptr_ = nullptr;
  size_t recv_left_ = 0;
  core::TrafficCounter traffic_;
  bool recv_posted_ = false;
  Clock::time_point recv_deadline_;
  LinkWatch* link_watch_ = nullptr;
};

// Links of one rank, indexed by peer rank; nullptr at the rank itself.
using Links = std::vector<PeerStream*>;

}  // namespace dt::collective::host
