#include "ps/roles/member_timeline.h"

#include <limits>

#include "core/timeline/clock_offset.h"
#include "core/timeline/timeline.h"

namespace dt::ps {

void label_timeline(Role role, const NodeTable& table, int64_t received_us) {
  core::timeline::ProcessLabel label;
  label.role = role_name(role);
  label.rank = table.your_rank;
  core::timeline::set_process(label);
  if (!table.scheduler_boot_id.empty() && table.scheduler_boot_id == core::timeline::boot_id()) {
    core::timeline::offer_clock_offset(0, 0);  // one host, one clock: nothing better exists
  } else if (table.scheduler_clock_us != 0) {
    // A scheduler that predates the stamps sends none: the offset stays 0.
    core::timeline::offer_clock_offset(core::timeline::clock_offset_us(table.scheduler_clock_us, received_us),
                                       std::numeric_limits<int64_t>::max());
  }
}

void refine_timeline_clock(int64_t sent_us, int64_t scheduler_clock_us, int64_t received_us) {
  if (scheduler_clock_us == 0) return;
  core::timeline::offer_clock_offset(core::timeline::clock_offset_us(sent_us, scheduler_clock_us, received_us),
                                     received_us - sent_us);
}

}  // namespace dt::ps
