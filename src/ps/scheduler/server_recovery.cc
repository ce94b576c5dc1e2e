#include "ps/scheduler/server_recovery.h"

#include <algorithm>

#include "core/log.h"
#include "ps/transport/frame.h"

namespace dt::ps {

using core::Error;
using core::ErrorCode;
using core::LogLevel;

void ServerRecovery::join(const wire::Register& r, uint32_t pipe, const RequestServer::Reply& reply, bool ending) {
  members_.check_layout(r);
  if (ending) throw Error(ErrorCode::kBadState, "a server registered to rejoin a job that is ending");
  Registration g;
  g.info = registered_node(r);
  g.pipe = pipe;
  g.reply = reply;
  // Deferred: answered once a departed server's place is free (at once,
  // usually), or with an error after startup_timeout_s (expire_joins).
  g.since = SchedulerClock::now();
  joins_.push_back(std::move(g));
  seat();
}

void ServerRecovery::seat() {
  while (!joins_.empty()) {
    Member* place = nullptr;
    for (auto& [key, m] : members_.all()) {
      if (m.info.role == Role::kServer && m.lost()) {
        place = &m;
        break;
      }
    }
    if (place == nullptr) return;
    Registration g = std::move(joins_.front());
    joins_.erase(joins_.begin());
    const NodeInfo predecessor = place->info;
    g.info.rank = predecessor.rank;
    place->take_place(g.info, g.pipe, MemberState::kRejoining, SchedulerClock::now());
    core::logf(LogLevel::kInfo, "scheduler",
               "%s registered to rejoin the running job in the place of %s; it is announced once it has the job's "
               "settings (DT_SERVER_REPLICATION=1)",
               place->info.describe().c_str(), predecessor.describe().c_str());
    flatbuffers::FlatBufferBuilder fbb(1024);
    g.reply(make_message(fbb, write_node_table(fbb, members_.table_for(place->info.rank, true))));
  }
}

void ServerRecovery::expire_joins(double timeout_s, bool ending) {
  for (auto it = joins_.begin(); it != joins_.end();) {
    // No place freed in time, or the job is ending: the server is told.
    if (!ending && std::chrono::duration<double>(SchedulerClock::now() - it->since).count() <= timeout_s) {
      ++it;
      continue;
    }
    const std::string text = ending ? "a server registered to rejoin a job that is ending"
                                    : "a server registered to rejoin the running job, and no server was lost "
                                      "whose place it could take within " + seconds_text(timeout_s);
    it->reply(make_error_reply(ending ? ErrorCode::kBadState : ErrorCode::kTimedOut, text));
    it = joins_.erase(it);
  }
}

void ServerRecovery::heard(Member& m, const wire::Heartbeat& h) {
  if (m.state() == MemberState::kDropped) {
    throw Error(ErrorCode::kPeerLost, m.info.describe() + " was dropped before it had rejoined the job (no heartbeat "
                                                          "within the heartbeat timeout): start it again");
  }
  if (!m.announced()) {
    // A rejoined server beats once it has the job's settings and serves:
    // from now on the workers route new copies to it.
    m.announce();
    const auto departures = std::count_if(departed_.begin(), departed_.end(),
                                          [](const LostNode& l) { return l.role == Role::kServer; });
    rejoined_.push_back(RejoinedServer{m.info, static_cast<uint32_t>(departures)});
    core::logf(LogLevel::kInfo, "scheduler",
               "%s rejoined the running job; the job has %d of %d servers again, and the rejoined one takes new "
               "copies of the parts left with one holder (DT_SERVER_REPLICATION=1)",
               m.info.describe().c_str(), members_.live_servers(), job_.num_servers);
  }
  if (m.info.role == Role::kWorker && h.copies_restored() > m.copies_restored) {
    m.copies_restored = h.copies_restored();
    announce_copies_restored();
  }
}

bool ServerRecovery::lose_rejoining(Member& m, const std::string& reason) {
  if (m.info.role != Role::kServer || m.announced()) return false;
  m.drop();
  core::logf(LogLevel::kInfo, "scheduler", "%s, which was rejoining the job, was lost before it served (%s)",
             m.info.describe().c_str(), reason.c_str());
  return true;
}

bool ServerRecovery::may_depart(const Member& m) const {
  if (options_.server_replicas == 0 || m.info.role != Role::kServer) return false;
  const int n = job_.num_servers;
  if (n < 2) return false;
  // Where every part is held for certain: its holders after the changes
  // every worker has seen its new copies filled after (ps::part_holders;
  // before any, its server and replica). A holder whose state is gone since
  // (lost in a later change, or the server lost now) does not count; the
  // part survives this loss when another holder is left.
  const std::vector<ServerChange> all = server_changes(departed_, rejoined_);
  const uint32_t restored = copies_restored(all);
  const std::vector<ServerChange> settled(all.begin(), all.begin() + restored);
  std::vector<bool> gone(static_cast<size_t>(n), false);
  for (size_t i = restored; i < all.size(); ++i) {
    if (!all[i].rejoined) gone[static_cast<size_t>(all[i].server)] = true;
  }
  gone[static_cast<size_t>(m.info.rank)] = true;
  for (int home = 0; home < n; ++home) {
    bool kept = false;
    for (const PartHolder& holder : part_holders(home, n, settled)) {
      kept = kept || !gone[static_cast<size_t>(holder.server)];
    }
    if (!kept) return false;
  }
  return true;
}

void ServerRecovery::departed(const LostNode& lost) {
  // Workers switch its parts to their other holders when their heartbeats
  // bring the news, and give every part it held a new copy on the next
  // server left, as they push it.
  const int left = members_.live_servers();
  core::logf(LogLevel::kInfo, "scheduler",
             "%s; the job goes on with %d of %d servers (DT_SERVER_REPLICATION=1): its key parts are served by their "
             "other holders%s",
             lost.message().c_str(), left, job_.num_servers,
             left >= 2 ? ", and every part it held gets a new copy on the next server left as the workers push it"
                       : "; one server is left, so the parts now have one copy (losing it would end the job)");
  seat();
}

uint32_t ServerRecovery::copies_restored(const std::vector<ServerChange>& changes) const {
  uint32_t restored = static_cast<uint32_t>(changes.size());
  for (const auto& [key, m] : members_.all()) {
    if (m.info.role == Role::kWorker && !m.lost()) restored = std::min(restored, m.copies_restored);
  }
  return restored;
}

void ServerRecovery::announce_copies_restored() {
  const std::vector<ServerChange> all = server_changes(departed_, rejoined_);
  const uint32_t restored = copies_restored(all);
  if (restored <= copies_restored_announced_ || members_.live_servers() < 2) return;
  copies_restored_announced_ = restored;
  const auto rejoins =
      std::count_if(all.begin(), all.begin() + restored, [](const ServerChange& c) { return c.rejoined; });
  const std::string after = rejoins == 0 ? "the loss of " + std::to_string(restored) + " server(s)"
                                         : std::to_string(restored - rejoins) + " server loss(es) and " +
                                               std::to_string(rejoins) + " rejoin(s)";
  core::logf(LogLevel::kInfo, "scheduler",
             "every worker's key parts have two holders again after %s: their new copies are filled "
             "(DT_SERVER_REPLICATION=1)",
             after.c_str());
}

}  // namespace dt::ps
