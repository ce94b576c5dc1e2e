// A process's clock offset to the scheduler's, so that dtrun can put every
// process's timeline on one clock.
//
// On the scheduler's host (the same boot id) every process reads the same
// steady clock: the offset is 0, exactly. Elsewhere it is estimated from the
// scheduler's clock stamps:
//  - at registration, the node table's stamp t2 against the node's clock at
//    its arrival t3: t2 - t3, the offset less the reply's delivery time. Not
//    the midpoint of the whole exchange: a node's Register waits in its
//    connection until the scheduler listens (15 ms was seen), so the
//    request's leg says nothing of the clocks;
//  - then each heartbeat, sent at t0 over the open connection and answered
//    at once (stamp t2), read back at t3: Cristian's estimate
//    t2 - (t0 + t3) / 2, wrong by at most half the round trip t3 - t0. The
//    heartbeat with the shortest round trip wins (NTP's clock filter).
#pragma once

#include <cstdint>
#include <string>

namespace dt::core::timeline {

// The registration's estimate: what to add to the node's clock to get the
// scheduler's, in microseconds.
inline int64_t clock_offset_us(int64_t scheduler_sent_us, int64_t node_received_us) {
  return scheduler_sent_us - node_received_us;
}

// A heartbeat's (Cristian's) estimate.
inline int64_t clock_offset_us(int64_t node_sent_us, int64_t scheduler_sent_us, int64_t node_received_us) {
  return scheduler_sent_us - node_sent_us / 2 - node_received_us / 2 - (node_sent_us % 2 + node_received_us % 2) / 2;
}

// This host's boot id ("" where the kernel does not say): processes that
// read the same one share one steady clock.
std::string boot_id();

}  // namespace dt::core::timeline
