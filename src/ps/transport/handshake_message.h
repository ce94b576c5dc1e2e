// The authentication handshake (net/auth_handshake.h) as a Message of the
// parameter server's transport: both the dialling RequestClient and the
// listening ConnectionAuthenticator send their handshake steps through the
// same nng message path as requests. Kept here, not in net/, because Message
// belongs to this transport; the collectives send the handshake's MACs over
// their own streams.
#pragma once

#include "net/auth_handshake.h"
#include "ps/transport/message.h"

namespace dt::ps {

// The bytes of encode_handshake(m) in a new Message. Throws like
// Message::with_capacity.
Message handshake_message(const net::HandshakeMessage& m);

}  // namespace dt::ps
