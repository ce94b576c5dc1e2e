// The reply a server gives the earlier copy of a request that the worker
// sent again (PS_RESEND; ps/server/resent_requests.h), so the copy frees its
// place on the connection. The server's handler threads may take two copies
// out of order, so this can reach the copy the worker still waits for: a
// RequestClient that resends takes it as "send again", never as an answer.
// Outside the FlatBuffers protocol, like the authentication messages: a
// frame's first four bytes are its FlatBuffer's size, which "DTSU" would make
// over a gigabyte.
#pragma once

#include <cstring>

#include "ps/transport/message.h"

namespace dt::ps {

inline constexpr char kSupersededMagic[4] = {'D', 'T', 'S', 'U'};

inline Message superseded_reply() {
  Message m = Message::with_capacity(sizeof kSupersededMagic);
  std::memcpy(m.grow(sizeof kSupersededMagic), kSupersededMagic, sizeof kSupersededMagic);
  return m;
}

inline bool is_superseded_reply(const Message& m) {
  return m.size() == sizeof kSupersededMagic && std::memcmp(m.data(), kSupersededMagic, sizeof kSupersededMagic) == 0;
}

}  // namespace dt::ps
