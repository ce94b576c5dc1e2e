// The listening side of the job's authentication (net/auth_handshake.h): which
// connections of a RequestServer have proven they hold the secret. Every
// request passes screen() before the handler sees it; only requests of
// proven connections go on. Thread-safe.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>

#include "net/auth_handshake.h"
#include "net/transport_security.h"
#include "ps/transport/message.h"

namespace dt::ps {

class ConnectionAuthenticator {
 public:
  explicit ConnectionAuthenticator(const net::JobSecret& secret) : secret_(secret) {}

  struct Outcome {
    enum Action {
      kPass,   // a proven connection's request: hand it to the handler
      kReply,  // answer with `reply` (a handshake step or a refusal)
      kClose,  // a connection that already failed speaks again: close it, no answer
    };
    Action action = kPass;
    Message reply;
    // Non-empty once per failing connection: what to log (with the peer's
    // address, which the transport knows).
    std::string log;
  };

  // request.pipe_id() names the connection; 0 (a message made in-process)
  // always passes.
  Outcome screen(const Message& request);
  // Whether the connection has proven itself (its next request that is no
  // handshake step passes screen()): a lookup, no handshake work.
  bool proven(uint32_t pipe);
  // The connection closed: its state goes.
  void forget(uint32_t pipe);

 private:
  struct Connection {
    bool challenged = false;  // a Hello was answered; Proof expected
    bool proven = false;
    bool failed = false;  // a wrong proof or malformed handshake
    bool logged = false;
    net::Nonce client_nonce{};
    net::Nonce server_nonce{};
  };
  Outcome refuse(Connection& c, const std::string& reason, bool failed);

  const net::JobSecret secret_;
  std::mutex mutex_;
  std::unordered_map<uint32_t, Connection> connections_;
};

}  // namespace dt::ps
