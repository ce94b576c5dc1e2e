#include "net/auth_handshake.h"

#include <cstring>

#include "core/error.h"

namespace dt::net {

using core::Error;
using core::ErrorCode;

namespace {

constexpr uint8_t kMagic[4] = {'D', 'T', 'A', 'H'};
constexpr uint8_t kVersion = 1;

size_t body_bytes(HandshakeType type) {
  switch (type) {
    case HandshakeType::kHello: return sizeof(Nonce);
    case HandshakeType::kChallenge: return sizeof(Nonce) + sizeof(Sha256Digest);
    case HandshakeType::kProof: return sizeof(Sha256Digest);
    default: return 0;
  }
}

bool has_reason(HandshakeType type) {
  return type == HandshakeType::kRefused || type == HandshakeType::kUnauthenticated;
}

Sha256Digest labelled_mac(const char* label, const JobSecret& secret, const Nonce& client_nonce,
                          const Nonce& server_nonce) {
  return hmac_sha256(secret.data(), secret.size(),
                     {{reinterpret_cast<const uint8_t*>(label), std::strlen(label) + 1},
                      {client_nonce.data(), client_nonce.size()},
                      {server_nonce.data(), server_nonce.size()}});
}

}  // namespace

bool is_handshake(const uint8_t* data, size_t size) {
  return size >= sizeof kMagic && std::memcmp(data, kMagic, sizeof kMagic) == 0;
}

HandshakeMessage decode_handshake(const uint8_t* data, size_t size) {
  const auto fail = [](const std::string& what) {
    return Error(ErrorCode::kProtocol, "malformed authentication message: " + what);
  };
  if (size < kHandshakeHeaderBytes || !is_handshake(data, size)) throw fail("no DTAH header");
  if (data[4] != kVersion) throw fail("version " + std::to_string(data[4]) + ", this node speaks 1");
  if (data[6] != 0 || data[7] != 0) throw fail("reserved bytes are not zero");
  const uint8_t type = data[5];
  if (type < static_cast<uint8_t>(HandshakeType::kHello) || type > static_cast<uint8_t>(HandshakeType::kUnauthenticated)) {
    throw fail("unknown type " + std::to_string(type));
  }
  HandshakeMessage m;
  m.type = static_cast<HandshakeType>(type);
  const uint8_t* body = data + kHandshakeHeaderBytes;
  const size_t body_size = size - kHandshakeHeaderBytes;
  if (has_reason(m.type)) {
    if (body_size > kHandshakeReasonMaxBytes) throw fail("a reason of " + std::to_string(body_size) + " bytes");
    m.reason.assign(reinterpret_cast<const char*>(body), body_size);
    return m;
  }
  if (body_size != body_bytes(m.type)) {
    throw fail("type " + std::to_string(type) + " with " + std::to_string(body_size) + " bytes, not " +
               std::to_string(body_bytes(m.type)));
  }
  switch (m.type) {
    case HandshakeType::kHello: std::memcpy(m.nonce.data(), body, m.nonce.size()); break;
    case HandshakeType::kChallenge:
      std::memcpy(m.nonce.data(), body, m.nonce.size());
      std::memcpy(m.mac.data(), body + m.nonce.size(), m.mac.size());
      break;
    case HandshakeType::kProof: std::memcpy(m.mac.data(), body, m.mac.size()); break;
    default: break;
  }
  return m;
}

std::string encode_handshake(const HandshakeMessage& m) {
  std::string out(reinterpret_cast<const char*>(kMagic), sizeof kMagic);
  out += static_cast<char>(kVersion);
  out += static_cast<char>(m.type);
  out.append(2, '\0');
  const auto append = [&out](const uint8_t* p, size_t n) { out.append(reinterpret_cast<const char*>(p), n); };
  switch (m.type) {
    case HandshakeType::kHello: append(m.nonce.data(), m.nonce.size()); break;
    case HandshakeType::kChallenge:
      append(m.nonce.data(), m.nonce.size());
      append(m.mac.data(), m.mac.size());
      break;
    case HandshakeType::kProof: append(m.mac.data(), m.mac.size()); break;
    case HandshakeType::kRefused:
    case HandshakeType::kUnauthenticated: out += m.reason.substr(0, kHandshakeReasonMaxBytes); break;
    case HandshakeType::kAccepted: break;
  }
  return out;
}

Sha256Digest server_mac(const JobSecret& secret, const Nonce& client_nonce, const Nonce& server_nonce) {
  return labelled_mac("disttrain-auth-v1 server", secret, client_nonce, server_nonce);
}

Sha256Digest client_mac(const JobSecret& secret, const Nonce& client_nonce, const Nonce& server_nonce) {
  return labelled_mac("disttrain-auth-v1 client", secret, client_nonce, server_nonce);
}

Nonce fresh_nonce() {
  Nonce n{};
  random_bytes(n.data(), n.size());
  return n;
}

}  // namespace dt::net
