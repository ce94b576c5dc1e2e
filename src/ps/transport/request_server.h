// The server side of the request/reply transport: an nng rep0 socket listening
// on one or more URLs, `concurrency` nng contexts receiving at once, and a
// small pool of threads that run the handler (not nng's own threads, so a
// slow handler cannot stall nng's I/O). The one exception is the latency
// path: a request the optional Quick check calls cheap (a small push or
// pull) is handled on the nng thread that completed its receive, which
// saves the hand-off to the pool, a thread wake-up that costs more than
// such a request's whole handling.
//
// The handler owns each request and answers it by calling its Reply exactly
// once, from any thread, possibly later: a deferred reply keeps its context
// busy, which is how a dist_sync pull waits for its round.
//
// No peer can drain what others need (issue 23): `receivers` contexts always
// wait for the next request (a context whose reply is deferred is replaced
// by a fresh or idle one, so held requests never block heartbeats); one
// connection has at most ConnectionPolicy::per_connection requests in the
// handler's hands, more are answered at once with an error; and with a
// reply deadline, a request still unanswered then is answered kTimedOut by
// the transport itself.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/traffic.h"
#include "net/transport_security.h"
#include "ps/transport/message.h"

namespace dt::ps {

// What one connection may hold of a RequestServer.
struct ConnectionPolicy {
  // Requests of one connection handed to the handler and not yet answered.
  // A well-behaved peer stays below it (a worker keeps two lanes of
  // kLaneWindow messages and one command in flight to a server).
  int per_connection = 16;
  // > 0: a request unanswered this long is answered Error(kTimedOut) by the
  // transport and its later Reply is dropped. 0: no transport deadline.
  double reply_deadline_s = 0;
};

class RequestServer {
 public:
  // Calling it a second time, or after the server was destroyed, drops the
  // message: safe, so a handler's stored replies may outlive the server.
  using Reply = std::function<void(Message)>;
  using Handler = std::function<void(Message request, Reply reply)>;
  // Called (on an nng thread; keep it short, do not call back into the
  // server) when a connection closes: the id is Message::pipe_id() of the
  // requests that came on it. How the scheduler sees a killed process at once.
  using PipeClosed = std::function<void(uint32_t pipe_id)>;
  // Called on an nng thread for each request (with a job secret: only those
  // of connections that have proven it; handshake steps never): true when the handler may run right there because it will be
  // quick and never block for long (a few microseconds of copying and
  // summing); false hands the request to the pool, as without a Quick. It
  // reads the untrusted request, so it must check what it reads; it must
  // not throw (a throw counts as false).
  using Quick = std::function<bool(const Message& request)>;

  // Listens on every URL (e.g. "tcp://127.0.0.1:0", "ipc:///tmp/dt-<pid>-<n>.ipc",
  // "inproc://name"); port 0 picks a free port (see bound_urls()).
  // receivers: contexts kept waiting for requests (>= 1).
  // A message larger than max_message_bytes makes nng drop it and close the
  // connection that carried it, without telling the handler (the requester
  // sees kNetwork, or kTimedOut): set it above the largest frame the protocol
  // sends. nng's inproc transport does not apply the bound.
  // Throws core::Error(kNetwork) naming the URL, "address in use" for a taken
  // port; kInvalidArgument for a malformed URL, receivers < 1 or per_connection < 1.
  // security.secret: every connection must prove it holds the job's secret
  // (net/auth_handshake.h) before any of its requests reaches the
  // handler; others are answered "unauthenticated" and logged once.
  // security.tls: each tcp:// URL listens as tls+tcp:// (as bound_urls()
  // says), where only peers with a certificate from the job's CA get a
  // connection (net/tls_config.h); files that cannot be used are
  // kInvalidArgument naming them.
  // quick: which requests are handled where they were received (see Quick);
  // null: every one by the pool.
  RequestServer(const std::vector<std::string>& urls, int receivers, Handler handler, size_t max_message_bytes,
                PipeClosed on_pipe_closed = nullptr, ConnectionPolicy policy = ConnectionPolicy(),
                const net::TransportSecurity& security = net::TransportSecurity(), Quick quick = nullptr);
  // Stops receiving, drops replies still pending (their requesters see a
  // closed connection), joins the handler threads.
  ~RequestServer();
  RequestServer(const RequestServer&) = delete;
  RequestServer& operator=(const RequestServer&) = delete;

  // The URLs as bound: tcp port 0 replaced by the real port, and a
  // tcp://0.0.0.0 host left as is (peers need this node's address instead).
  std::vector<std::string> bound_urls() const;

  // Bytes of the requests it received and the replies it sent, whole
  // messages as a RequestClient counts them.
  core::Traffic traffic() const;

  // nng contexts this server has opened so far (receiving, holding a
  // request, or idle): bounded by receivers plus the held requests.
  size_t contexts() const;

  // Requests handed to the handler so far, on the thread that received them
  // (Quick said so) and by the pool.
  struct Handled {
    uint64_t on_receipt = 0;
    uint64_t by_pool = 0;
  };
  Handled handled() const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace dt::ps
