// The authentication handshake's messages (decode_handshake), which a
// listener reads from peers that have not proven anything yet. The format
// has exactly one spelling per message, so whatever is accepted must encode
// back to the very same bytes.
#include <cstring>
#include <string>

#include "core/error.h"
#include "fuzz_support.h"
#include "net/auth_handshake.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  dt::net::HandshakeMessage message;
  try {
    message = dt::net::decode_handshake(data, size);
  } catch (const dt::core::Error&) {
    return 0;
  }
  dt::fuzz::require(dt::net::is_handshake(data, size), "an accepted handshake without the magic");
  const std::string encoded = dt::net::encode_handshake(message);
  dt::fuzz::require(encoded.size() == size && std::memcmp(encoded.data(), data, size) == 0,
                    "an accepted handshake does not encode back to its bytes");
  return 0;
}
