// RequestClient's shared state (request_client.h): the nng socket, its
// request slots and the connection's proof of the job's secret. Internal to
// the client's two parts: the request bookkeeping (request_client.cc) and the
// per-connection handshake (request_client_handshake.cc). Held by a
// shared_ptr so that handshake callbacks can outlive the client (they hold a
// weak_ptr). Every field named "guarded by mutex" is; the slots' aios call
// back on nng threads.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nng/nng.h>

#include "core/traffic.h"
#include "net/auth_handshake.h"
#include "net/nng_handles.h"
#include "ps/transport/request_client.h"

namespace dt::ps {

struct RequestClient::State {
  // One request slot: an nng context and its aio, reused across requests so a
  // busy client does not open a context per request. Owned by State::all.
  struct PendingRequest {
    State* state = nullptr;
    net::NngContext ctx;
    net::Aio aio;
    bool receiving = false;
    std::chrono::steady_clock::time_point deadline;
    std::chrono::milliseconds budget{0};
    // A handshake step: its reply is the caller's to read, not turned into
    // an error.
    bool raw = false;
    // PS_RESEND: the bytes to send again when no reply comes within
    // resend_after (empty otherwise).
    Message copy;
    std::chrono::milliseconds resend_after{0};
    Done done;
  };
  using Clock = std::chrono::steady_clock;
  // A request waiting for the connection to prove itself.
  struct Held {
    Message msg;
    Clock::time_point deadline;
    Done done;
    std::chrono::milliseconds resend_after{0};
  };

  std::string url;
  net::Socket socket;
  std::mutex mutex;
  std::condition_variable connected_cv;
  int pipes = 0;
  bool closed = false;
  bool abandoned = false;  // abandon(): the socket is never closed
  // Some request was sent with PS_RESEND's short timeouts (see close()).
  std::atomic<bool> resent{false};
  std::function<void()> on_disconnect;  // guarded by mutex
  // Requests between acquire() and their nng_ctx_send: close() waits for
  // them, since nng 1.5 may use a context's freed lock when a send races the
  // socket's close (seen as "panic: pthread_mutex_lock" in a heartbeat).
  int sending = 0;
  std::condition_variable sends_done;
  std::vector<std::unique_ptr<PendingRequest>> all;
  std::vector<PendingRequest*> idle;
  core::TrafficCounter traffic;

  // Authentication (auth_handshake.h), when the job has a secret. Guarded
  // by mutex: the newest connection, the one that has proven itself, and the
  // requests waiting for a proof.
  std::optional<net::JobSecret> secret;
  uint32_t current_pipe = 0;
  uint32_t proven_pipe = 0;
  bool handshaking = false;
  std::deque<Held> held;
  std::weak_ptr<State> weak_self;

  // Sends msg at once on a fresh slot (done gets kClosed after close()).
  void send_now(Message msg, Clock::time_point deadline, bool raw, Done done,
                std::chrono::milliseconds resend_after = std::chrono::milliseconds(0));
  // Runs the handshake on the current connection; `handshaking` is set.
  void start_handshake();
  void handshake_succeeded(uint32_t pipe);
  // retry: a transient failure (connection lost, no reply in time): held
  // requests with time left wait for another attempt.
  void handshake_failed(const core::Error& error, bool retry);

  // PS_RESEND: sends p's copy again on its context, as a new request id (a
  // late reply to the earlier one is dropped by nng). False when p's
  // deadline has passed.
  bool resend(PendingRequest* p);

  static void on_aio(void* arg);
  static void on_pipe_event(nng_pipe pipe, nng_pipe_ev event, void* arg);
  PendingRequest* acquire();  // a free slot; counts the request as sending
  void sent();                // the send was handed to nng
  void finish(PendingRequest* p, std::optional<core::Error> error, Message reply);
  // close() and abandon(): marks the client closed, answers every request
  // with kClosed and stops the aios; the requests' slots, or nullopt when
  // the client was closed already.
  std::optional<std::vector<PendingRequest*>> fail_pending();
  core::Error error_for(int rv, const PendingRequest& p);
};

}  // namespace dt::ps
