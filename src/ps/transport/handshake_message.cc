#include "ps/transport/handshake_message.h"

#include <cstring>
#include <string>

namespace dt::ps {

Message handshake_message(const net::HandshakeMessage& m) {
  const std::string bytes = net::encode_handshake(m);
  Message msg = Message::with_capacity(bytes.size());
  std::memcpy(msg.grow(bytes.size()), bytes.data(), bytes.size());
  return msg;
}

}  // namespace dt::ps
