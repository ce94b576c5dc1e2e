// The proof of the job's secret on each connection (net/auth_handshake.h):
// requests wait, held, until the newest connection has proven itself, then
// leave on it.
#include <algorithm>

#include "ps/transport/handshake_message.h"
#include "ps/transport/request_client_state.h"

namespace dt::ps {

using core::Error;
using core::ErrorCode;

void RequestClient::State::start_handshake() {
  Clock::time_point deadline = Clock::now();
  {
    std::lock_guard<std::mutex> lock(mutex);
    for (const Held& h : held) deadline = std::max(deadline, h.deadline);
  }
  const net::Nonce client_nonce = net::fresh_nonce();
  net::HandshakeMessage hello;
  hello.type = net::HandshakeType::kHello;
  hello.nonce = client_nonce;
  std::weak_ptr<State> weak = weak_self;
  send_now(handshake_message(hello), deadline, true, [weak, client_nonce, deadline](std::optional<Error> error,
                                                                                     Message reply) {
    std::shared_ptr<State> self = weak.lock();
    if (!self) return;
    if (error) return self->handshake_failed(*error, error->code() != ErrorCode::kClosed);
    net::HandshakeMessage challenge;
    try {
      challenge = net::decode_handshake(reply.data(), reply.size());
    } catch (const Error&) {
      return self->handshake_failed(
          Error(ErrorCode::kUnauthenticated, self->url + " takes no part in the job's authentication: it answered "
                                                         "the handshake with something else (no DT_JOB_SECRET on "
                                                         "that node, or another program on that port?)"),
          false);
    }
    if (challenge.type != net::HandshakeType::kChallenge) {
      return self->handshake_failed(
          Error(ErrorCode::kUnauthenticated, self->url + " refused the connection: " + challenge.reason), false);
    }
    const net::Sha256Digest expected = net::server_mac(*self->secret, client_nonce, challenge.nonce);
    if (!net::equal_in_constant_time(expected.data(), challenge.mac.data(), expected.size())) {
      return self->handshake_failed(Error(ErrorCode::kUnauthenticated,
                                          self->url + " does not hold this job's secret: its authentication "
                                                      "proof does not match (a different job, or a wrong "
                                                      "DT_JOB_SECRET on one side)"),
                                    false);
    }
    net::HandshakeMessage proof;
    proof.type = net::HandshakeType::kProof;
    proof.mac = net::client_mac(*self->secret, client_nonce, challenge.nonce);
    const uint32_t challenged_pipe = reply.pipe_id();
    self->send_now(handshake_message(proof), deadline, true,
                   [weak, challenged_pipe](std::optional<Error> error, Message answer) {
                     std::shared_ptr<State> self = weak.lock();
                     if (!self) return;
                     if (error) return self->handshake_failed(*error, error->code() != ErrorCode::kClosed);
                     net::HandshakeMessage verdict;
                     try {
                       verdict = net::decode_handshake(answer.data(), answer.size());
                     } catch (const Error& e) {
                       return self->handshake_failed(e, false);
                     }
                     if (verdict.type == net::HandshakeType::kAccepted) {
                       return self->handshake_succeeded(answer.pipe_id());
                     }
                     // The proof went out on a newer connection than the
                     // challenge (a reconnect in between): try again there.
                     const bool moved = answer.pipe_id() != challenged_pipe;
                     self->handshake_failed(
                         Error(ErrorCode::kUnauthenticated, self->url + " refused the connection: " + verdict.reason),
                         moved);
                   });
  });
}

void RequestClient::State::handshake_succeeded(uint32_t pipe) {
  std::deque<Held> ready;
  bool again = false;
  {
    std::lock_guard<std::mutex> lock(mutex);
    proven_pipe = pipe;
    // Proven on a connection that is already gone: prove the new one.
    again = pipe != current_pipe && !held.empty() && !closed;
    if (!again) {
      handshaking = false;
      ready.swap(held);
    }
  }
  if (again) return start_handshake();
  const auto now = Clock::now();
  for (Held& h : ready) {
    if (h.deadline <= now) {
      h.done(Error(ErrorCode::kTimedOut, "could not reach " + url + " in time (the connection was proving the "
                                                                    "job's secret)"),
             Message());
    } else {
      send_now(std::move(h.msg), h.deadline, false, std::move(h.done), h.resend_after);
    }
  }
}

void RequestClient::State::handshake_failed(const Error& error, bool retry) {
  std::deque<Held> failed;
  bool again = false;
  {
    std::lock_guard<std::mutex> lock(mutex);
    const auto now = Clock::now();
    std::deque<Held> keep;
    for (Held& h : held) {
      if (retry && !closed && h.deadline > now) {
        keep.push_back(std::move(h));
      } else {
        failed.push_back(std::move(h));
      }
    }
    held.swap(keep);
    again = !held.empty();
    handshaking = again;
  }
  for (Held& h : failed) h.done(error, Message());
  if (again) start_handshake();
}

}  // namespace dt::ps
