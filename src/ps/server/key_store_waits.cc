// ServerKeyStore::open_rounds: what the stall inspector reads of the parts,
// through PartRounds' and PartAttendance's plain accessors only.
#include <shared_mutex>
#include <string>

#include "ps/server/key_store.h"
#include "ps/server/key_store_entry.h"

namespace dt::ps {

std::vector<core::OpenWait> ServerKeyStore::open_rounds() const {
  std::vector<core::OpenWait> waits;
  if (!rules_.is_sync()) return waits;
  std::shared_lock<std::shared_mutex> map_lock(entries_mutex_);
  for (const auto& [id, entry] : entries_) {
    Entry& e = *entry;
    std::lock_guard<std::mutex> lock(e.mutex);
    const PartRounds& r = e.rounds;
    if (!r.ready()) continue;
    const int64_t round = r.applied_round() + 1;
    bool begun = false;
    std::vector<int> missing;
    for (int w = 0; w < r.num_workers(); ++w) {
      if (r.last_pushed(w) >= round) {
        begun = true;
      } else if (!e.attendance.absent(w, round)) {
        missing.push_back(w);
      }
    }
    if (!begun || missing.empty()) continue;
    const std::string name = part_name(r.info().part);
    waits.push_back(core::OpenWait{name + " round " + std::to_string(round),
                                   "round " + std::to_string(round) + " of " + name + " waits for workers " +
                                       core::rank_set_text(missing),
                                   missing});
  }
  return waits;
}

}  // namespace dt::ps
