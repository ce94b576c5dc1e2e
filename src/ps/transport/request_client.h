// The client side of the request/reply transport: an nng req0 socket dialing
// one URL, reconnecting in the background (so the peer may start later), with
// many requests in flight at once, each on its own nng context.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "core/error.h"
#include "core/traffic.h"
#include "net/transport_security.h"
#include "ps/transport/message.h"

namespace dt::ps {

// Default bound for received messages (nng drops larger ones silently).
constexpr size_t kDefaultMaxMessageBytes = size_t{1} << 30;

class RequestClient {
 public:
  // error is empty on success (reply holds the answer, not yet verified: pass
  // it to Frame::parse); otherwise reply is empty and error says why:
  //  kTimedOut  no reply within the deadline (peer unreachable, or slow)
  //  kClosed    the client was closed
  //  kNetwork   the connection dropped while waiting (peer died)
  // Done runs on an nng thread: keep it short and never block in it on
  // another request of this client.
  using Done = std::function<void(std::optional<core::Error> error, Message reply)>;

  // Starts dialing url in the background. When connect_timeout > 0, waits up
  // to that long for the first connection and throws core::Error(kTimedOut)
  // "no connection to <url> within <t> s" otherwise; 0 returns at once
  // (requests then wait for the connection within their own deadlines).
  // kInvalidArgument for a malformed URL.
  // security.secret: before its first request on each connection the client
  // proves it holds the job's secret and checks that the peer does too
  // (net/auth_handshake.h); requests wait for that within their own
  // deadlines. A peer that refuses the proof, or takes no part, fails them
  // with kUnauthenticated.
  // security.tls: a tcp:// URL is dialed as tls+tcp://, and only a peer with
  // a certificate from the job's CA is connected (net/tls_config.h);
  // one refused in the handshake looks unreachable: requests fail kTimedOut.
  RequestClient(const std::string& url, std::chrono::milliseconds connect_timeout,
                size_t max_message_bytes = kDefaultMaxMessageBytes,
                const net::TransportSecurity& security = net::TransportSecurity());
  ~RequestClient();  // close()
  RequestClient(const RequestClient&) = delete;
  RequestClient& operator=(const RequestClient&) = delete;

  // Sends msg and calls done exactly once with the reply or the error (at
  // once, on this thread, when the client is closed). Never
  // resends: a request is delivered at most once (a push must not be counted
  // twice). deadline covers sending and waiting for the reply.
  //
  // resend_after > 0 (PS_RESEND): when no reply has come that long after a
  // send, the same bytes are sent again (nng drops the first reply if it
  // comes after all), until the deadline. Only for requests whose receiver
  // recognises a repeat (DataRequest.may_resend); the client keeps a copy of
  // the message meanwhile.
  void request(Message msg, std::chrono::milliseconds deadline, Done done,
               std::chrono::milliseconds resend_after = std::chrono::milliseconds(0));
  // request() and wait; throws core::Error as listed above.
  Message call(Message msg, std::chrono::milliseconds deadline);
  // Fails every pending request with kClosed and refuses new ones. Idempotent.
  void close();
  // The peer is gone for good (a lost server the job goes on without): as
  // close(), but the socket is left open, unused, until the process ends.
  // nng 1.5.2's nng_close of a socket whose requests were just cancelled
  // has blocked for good (a worker stuck in it after a failover); leaving
  // it is cheaper than that. Idempotent; close() after it does nothing.
  void abandon();

  const std::string& url() const { return url_; }
  // Whether a connection to the peer is currently up.
  bool connected() const;
  // Called (on an nng thread: keep it short, no requests of this client from
  // it) each time a connection to the peer closes while the client is open:
  // how a node sees its scheduler die at once instead of after the
  // heartbeat timeout.
  void on_disconnect(std::function<void()> callback);
  // Bytes of the requests handed to nng and of the replies received.
  core::Traffic traffic() const;

 private:
  struct State;
  std::string url_;
  std::shared_ptr<State> state_;
};

}  // namespace dt::ps
