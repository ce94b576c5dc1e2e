// The handshake by which both ends of a connection prove they hold the job's
// secret (issue 18), before any other message of that connection is acted
// on. Challenge-response with a fresh nonce from each side, so a recorded
// handshake proves nothing on a new connection:
//
//   dialler  -> Hello      client nonce Nc (32 random bytes)
//   listener -> Challenge  server nonce Ns, HMAC(secret, "server" | Nc | Ns)
//   dialler  -> Proof      HMAC(secret, "client" | Nc | Ns)
//   listener -> Accepted   (or Refused, with the reason)
//
// The dialler checks the listener's MAC before it sends its own, so neither
// side talks to an impostor; the "server"/"client" labels keep one side's
// MAC from ever serving as the other's. Nothing is encrypted (TLS does that,
// net/tls_config.h); the secret itself never crosses the wire.
//
// On the wire, outside the FlatBuffers protocol (a frame's first four bytes
// are its FlatBuffer's size, which "DTAH" would make over a gigabyte):
//   [0, 4)  "DTAH"   [4] version 1   [5] type   [6, 8) zero
//   then per type: Hello Nc | Challenge Ns, MAC | Proof MAC |
//   Accepted nothing | Refused, Unauthenticated: a reason, UTF-8, <= 512 bytes
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "net/hmac.h"
#include "net/transport_security.h"

namespace dt::net {

using Nonce = std::array<uint8_t, 32>;

enum class HandshakeType : uint8_t {
  kHello = 1,
  kChallenge = 2,
  kProof = 3,
  kAccepted = 4,
  kRefused = 5,
  // The listener's answer to an ordinary request on a connection that has
  // not proven itself (or to one whose peer has no secret configured).
  kUnauthenticated = 6,
};

struct HandshakeMessage {
  HandshakeType type = HandshakeType::kHello;
  Nonce nonce{};       // Hello: Nc; Challenge: Ns
  Sha256Digest mac{};  // Challenge, Proof
  std::string reason;  // Refused, Unauthenticated
};

constexpr size_t kHandshakeHeaderBytes = 8;
constexpr size_t kHandshakeReasonMaxBytes = 512;

// Whether the bytes start like a handshake message (the magic): cheap, for
// telling them apart from frames.
bool is_handshake(const uint8_t* data, size_t size);

// Error(kProtocol) naming what is wrong for anything that is not exactly one
// well-formed handshake message of the current version.
HandshakeMessage decode_handshake(const uint8_t* data, size_t size);

// The bytes of m (a reason longer than the bound is cut).
std::string encode_handshake(const HandshakeMessage& m);

// The two MACs of one handshake.
Sha256Digest server_mac(const JobSecret& secret, const Nonce& client_nonce, const Nonce& server_nonce);
Sha256Digest client_mac(const JobSecret& secret, const Nonce& client_nonce, const Nonce& server_nonce);

Nonce fresh_nonce();

}  // namespace dt::net
