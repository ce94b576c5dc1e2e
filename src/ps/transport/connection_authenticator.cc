#include "ps/transport/connection_authenticator.h"

#include "core/error.h"
#include "ps/transport/handshake_message.h"

namespace dt::ps {

ConnectionAuthenticator::Outcome ConnectionAuthenticator::refuse(Connection& c, const std::string& reason,
                                                                 bool failed) {
  Outcome out;
  out.action = Outcome::kReply;
  net::HandshakeMessage m;
  m.type = failed ? net::HandshakeType::kRefused : net::HandshakeType::kUnauthenticated;
  m.reason = reason;
  out.reply = handshake_message(m);
  c.failed = c.failed || failed;
  c.challenged = false;
  if (!c.logged) {
    c.logged = true;
    out.log = reason;
  }
  return out;
}

ConnectionAuthenticator::Outcome ConnectionAuthenticator::screen(const Message& request) {
  const uint32_t pipe = request.pipe_id();
  if (pipe == 0) return Outcome{};
  // Keys and MACs are computed outside the lock only where it matters little:
  // one HMAC is about a microsecond, so the lock is held throughout.
  std::lock_guard<std::mutex> lock(mutex_);
  Connection& c = connections_[pipe];
  if (c.failed) {
    Outcome out;
    out.action = Outcome::kClose;
    return out;
  }
  if (!net::is_handshake(request.data(), request.size())) {
    if (c.proven) return Outcome{};
    return refuse(c, "refused a request on a connection that has not proven it holds the job's secret "
                     "(is DT_JOB_SECRET or DT_JOB_SECRET_FILE set on that node?)", false);
  }
  net::HandshakeMessage m;
  try {
    m = net::decode_handshake(request.data(), request.size());
  } catch (const core::Error& e) {
    return refuse(c, e.what(), true);
  }
  switch (m.type) {
    case net::HandshakeType::kHello: {
      // A new Hello restarts the handshake: the connection is unproven until
      // the proof over this fresh nonce arrives.
      c.proven = false;
      c.challenged = true;
      c.client_nonce = m.nonce;
      c.server_nonce = net::fresh_nonce();
      net::HandshakeMessage challenge;
      challenge.type = net::HandshakeType::kChallenge;
      challenge.nonce = c.server_nonce;
      challenge.mac = net::server_mac(secret_, c.client_nonce, c.server_nonce);
      Outcome out;
      out.action = Outcome::kReply;
      out.reply = handshake_message(challenge);
      return out;
    }
    case net::HandshakeType::kProof: {
      if (!c.challenged) return refuse(c, "authentication proof without a challenge on this connection", true);
      const net::Sha256Digest expected = net::client_mac(secret_, c.client_nonce, c.server_nonce);
      c.challenged = false;  // each server nonce answers one proof only
      if (!net::equal_in_constant_time(expected.data(), m.mac.data(), expected.size())) {
        return refuse(c, "wrong job secret: the peer's authentication proof does not match this job's secret", true);
      }
      c.proven = true;
      net::HandshakeMessage accepted;
      accepted.type = net::HandshakeType::kAccepted;
      Outcome out;
      out.action = Outcome::kReply;
      out.reply = handshake_message(accepted);
      return out;
    }
    default:
      return refuse(c, "authentication message of a listener's type sent to a listener", true);
  }
}

bool ConnectionAuthenticator::proven(uint32_t pipe) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = connections_.find(pipe);
  return it != connections_.end() && it->second.proven && !it->second.failed;
}

void ConnectionAuthenticator::forget(uint32_t pipe) {
  std::lock_guard<std::mutex> lock(mutex_);
  connections_.erase(pipe);
}

}  // namespace dt::ps
