// The server side of the request/reply transport: an nng rep0 socket listening
// on one or more URLs, `concurrency` nng contexts receiving at once, and a
// small pool of threads that run the handler (never nng's own threads, so a
// slow handler cannot stall nng's I/O).
//
// The handler owns each request and answers it by calling its Reply exactly
// once, from any thread, possibly later: a deferred reply keeps that context
// busy (it receives the next request only after replying), which is how a
// dist_sync pull waits for its round. With `concurrency` contexts, at most
// that many requests are in flight; more wait in nng's queue.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ps/transport/message.h"

namespace dt::ps {

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

  // Listens on every URL (e.g. "tcp://0.0.0.0:0", "ipc:///tmp/dt-<pid>-<n>.ipc",
  // "inproc://name"); port 0 picks a free port (see bound_urls()).
  // A message larger than max_message_bytes makes nng drop it and close the
  // connection that carried it, without telling the handler (the requester
  // sees kNetwork, or kTimedOut): set it above the largest frame the protocol
  // sends. nng's inproc transport does not apply the bound.
  // Throws core::Error(kNetwork) naming the URL, "address in use" for a taken
  // port; kInvalidArgument for a malformed URL or concurrency < 1.
  RequestServer(const std::vector<std::string>& urls, int concurrency, Handler handler,
                size_t max_message_bytes, PipeClosed on_pipe_closed = nullptr);
  // Stops receiving, drops replies still pending (their requesters see a
  // closed connection), joins the handler threads.
  ~RequestServer();
  RequestServer(const RequestServer&) = delete;
  RequestServer& operator=(const RequestServer&) = delete;

  // The URLs as bound: tcp port 0 replaced by the real port, and a
  // tcp://0.0.0.0 host left as is (peers need this node's address instead).
  std::vector<std::string> bound_urls() const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace dt::ps
