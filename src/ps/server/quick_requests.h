// Which of a server's requests its transport may handle on the nng thread
// that received them (RequestServer::Quick): the latency path of small
// pushes and pulls, which would otherwise wait for a handler thread to wake
// up, longer than their whole handling takes.
//
// Quick: a well-formed DataRequest pushing, pulling or pushpulling parts of
// at most kQuickRequestBytes in all, none of them a new copy's. Its handling
// copies and sums that much at most, under one small part's lock at a time;
// a pull of a round not yet applied is held and answered later by the push
// that applies it, as on any thread. Everything else (inits, which may
// allocate keys; settings; the servers' own messages; large parts, whose
// pulls copy megabytes even when the request is small) goes to the handler
// pool.
//
// One limit of the rule: the push that applies a part's round also answers
// the pulls held for it, and a held pull of many small keys fused into one
// message (up to ~4 MiB, kvstore/request_lanes.h) is assembled then. That
// copy can fall to a quick push, as it falls to whichever pool thread
// applies the round.
#pragma once

#include <cstddef>

#include "ps/transport/message.h"

namespace dt::ps {

// What a quick request may move, pushed and pulled together.
constexpr size_t kQuickRequestBytes = size_t{64} << 10;

// Whether request is quick; false for anything that does not parse (the
// pool's handler answers it with the error).
bool is_quick_request(const Message& request);

}  // namespace dt::ps
