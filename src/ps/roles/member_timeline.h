// Names this process's timeline after the member the scheduler made it
// ("worker 0", "server 1") and places it on the scheduler's clock, from the
// scheduler's clock stamp on the node table (core/timeline/clock_offset.h).
#pragma once

#include <cstdint>

#include "ps/roles/node_table.h"

namespace dt::ps {

// received_us: this node's clock as the node table arrived.
void label_timeline(Role role, const NodeTable& table, int64_t received_us);

// A heartbeat sent at sent_us whose reply, stamped scheduler_clock_us (0: an
// older scheduler), arrived at received_us: one more sample of the offset.
void refine_timeline_clock(int64_t sent_us, int64_t scheduler_clock_us, int64_t received_us);

}  // namespace dt::ps
