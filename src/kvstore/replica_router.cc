#include "kvstore/replica_router.h"

#include <algorithm>
#include <string>

namespace dt::kvstore {

using core::Error;
using core::ErrorCode;
using ps::wire::DataOp;

namespace {

// A replicated part none of whose holders is left: the job cannot serve it.
Error every_holder_lost(const RequestPart& part) {
  return Error(ErrorCode::kPeerLost, "every server holding key " + std::to_string(part.key) + " elements [" +
                                         std::to_string(part.range.begin) + ", " + std::to_string(part.range.end) +
                                         ") was lost");
}

// Whether a failed message may mean its server died, which the scheduler
// confirms or not within its heartbeat timeout: the connection dropped, or
// the server answered that it is leaving the job (kPeerLost: one that
// stalled past the heartbeat timeout learns on waking that the job went on
// without it, and fails what it still holds).
bool may_be_a_lost_server(const Error& error) {
  return error.code() == ErrorCode::kNetwork || error.code() == ErrorCode::kTimedOut ||
         error.code() == ErrorCode::kClosed || error.code() == ErrorCode::kPeerLost;
}

}  // namespace

ReplicaRouter::ReplicaRouter(int num_servers, std::chrono::milliseconds verdict_wait)
    : verdict_wait_(verdict_wait),
      lost_(static_cast<size_t>(num_servers), false),
      parked_(static_cast<size_t>(num_servers)) {}

void ReplicaRouter::report_restored(std::optional<uint32_t> changes) const {
  if (changes && report_restored_) report_restored_(*changes);
}

std::optional<Error> ReplicaRouter::place(DataOp op, const RequestPart& part, const PlaceFn& place,
                                          const std::function<bool(int server)>& fused) {
  // A push to both of the part's holders (its server and its replica, or
  // after a loss the holder left and the new copy, whose pushes say where it
  // is filled from); a pull to the first. A pushpull to the first may leave
  // fused, its push to the second apart. Inits go to the holders the part
  // had from the start: a new copy takes the job's value from the holder it
  // copies.
  const int home = part.range.server;
  if (op == DataOp::Init) initialised_[{part.key, part.range.begin}] = part.range;
  const std::vector<ps::PartHolder> holders_now = holders(home);
  if (holders_now.empty()) return every_holder_lost(part);
  const int first = holders_now.front().server;
  const int second = holders_now.size() > 1 ? holders_now[1].server : -1;
  const int adopt_from = second >= 0 && !holders_now[1].original ? first : -1;
  auto encoding = part.src && op != DataOp::Pull ? std::make_shared<SharedEncoding>() : nullptr;
  const RequestPart pushed = push_half(part);
  auto route = [&](int server, int adopt, int peer) { return CopyRoute{adopt, peer, times_lost(server)}; };
  if (op == DataOp::Init) {
    std::vector<int> original;
    for (const ps::PartHolder& holder : holders_now) {
      if (holder.original) original.push_back(holder.server);
    }
    for (size_t i = 0; i < original.size(); ++i) {
      const int peer = original.size() > 1 ? original[1 - i] : -1;
      place(original[i], DataOp::Init, pushed, false, encoding, route(original[i], -1, peer));
    }
    return std::nullopt;
  }
  if (op == DataOp::PushPull && fused(first)) {
    place(first, op, part, true, encoding, route(first, -1, second));
    if (second >= 0) place(second, DataOp::Push, pushed, false, encoding, route(second, adopt_from, first));
    return std::nullopt;
  }
  if (op != DataOp::Pull) {
    place(first, DataOp::Push, pushed, false, encoding, route(first, -1, second));
    if (second >= 0) place(second, DataOp::Push, pushed, false, encoding, route(second, adopt_from, first));
  }
  if (op == DataOp::Pull || op == DataOp::PushPull) {
    place(first, DataOp::Pull, pull_half(part), true, nullptr, route(first, -1, -1));
  }
  return std::nullopt;
}

void ReplicaRouter::take_stale(size_t lane, std::vector<LaneUnit>& units, RequestLanes& lanes, EndedUnits& ended) {
  const int server = RequestLanes::server_of(lane);
  std::vector<LaneUnit> stale;
  for (auto it = units.begin(); it != units.end();) {
    if (it->route.epoch >= 0 && it->route.epoch < times_lost(server)) {
      stale.push_back(std::move(*it));
      it = units.erase(it);
    } else {
      ++it;
    }
  }
  if (stale.empty()) return;
  // A message with nothing left to send frees its place in the lane.
  if (units.empty()) lanes.answered(lane);
  redirect(std::move(stale), lanes, ended);
}

bool ReplicaRouter::reroute(int server, const std::vector<LaneUnit>& units, const Error& error,
                            const std::function<bool()>& no_verdict, RequestLanes& lanes, EndedUnits& ended) {
  // Lost now, or since the units left (a server that rejoined since is
  // another process: they were cut by its predecessor's loss).
  const bool cut_by_a_loss = std::any_of(units.begin(), units.end(), [&](const LaneUnit& unit) {
    return unit.route.epoch >= 0 && unit.route.epoch < times_lost(server);
  });
  if (lost_[static_cast<size_t>(server)] || cut_by_a_loss) {
    redirect(units, lanes, ended);
    return true;
  }
  // A dropped connection is usually a dead server: wait for the verdict
  // rather than fail a request its replica would have served. Nothing is
  // parked once the store closes or the job failed: no verdict comes then.
  if (!may_be_a_lost_server(error) || no_verdict()) return false;
  const auto now = std::chrono::steady_clock::now();
  for (const LaneUnit& unit : units) parked_[static_cast<size_t>(server)].push_back(Parked{unit, error, now});
  if (ask_for_news_) ask_for_news_();
  return true;
}

void ReplicaRouter::redirect(std::vector<LaneUnit> units, RequestLanes& lanes, EndedUnits& ended) {
  for (LaneUnit& unit : units) {
    // The other copy of a push (or of a fused pushpull's push) carries it,
    // as long as the server it went to is still there.
    const bool copy_kept = unit.route.peer >= 0 && !lost_[static_cast<size_t>(unit.route.peer)];
    if (unit.op == DataOp::Push || unit.op == DataOp::Init) {
      if (copy_kept) {
        ended.emplace_back(unit.request, std::nullopt);
      } else {
        ended.emplace_back(unit.request, every_holder_lost(unit.part));
      }
      continue;
    }
    if (unit.op == DataOp::PushPull) {
      if (!copy_kept) {
        ended.emplace_back(unit.request, every_holder_lost(unit.part));
        continue;
      }
      // Fused: its push's copy went to the other server already; what is
      // left is the pull.
      unit.op = DataOp::Pull;
      unit.part.src = nullptr;
      unit.encoding.reset();
      unit.route.peer = -1;
    }
    const std::vector<ps::PartHolder> left = holders(unit.part.range.server);
    if (left.empty()) {
      ended.emplace_back(unit.request, every_holder_lost(unit.part));
      continue;
    }
    const int other = left.front().server;
    unit.route.epoch = times_lost(other);
    lanes.queue(RequestLanes::pull_lane(other), std::move(unit));
  }
}

std::optional<uint32_t> ReplicaRouter::note_filled(int server, const std::vector<LaneUnit>& units) {
  if (awaiting_.empty()) return std::nullopt;
  for (const LaneUnit& unit : units) {
    if (unit.route.adopt_from < 0) continue;
    // A new copy answers a push only once it holds the part.
    filled_.insert({unit.part.key, unit.part.range.begin, server});
    auto it = awaiting_.find({unit.part.key, unit.part.range.begin});
    if (it != awaiting_.end() && it->second == server) awaiting_.erase(it);
  }
  if (!awaiting_.empty()) return std::nullopt;
  return static_cast<uint32_t>(changes_.size());
}

std::optional<uint32_t> ReplicaRouter::await_new_copies() {
  awaiting_.clear();
  for (const auto& [id, range] : initialised_) {
    const std::vector<ps::PartHolder> now = holders(range.server);
    if (now.size() < 2 || now[1].original) continue;
    if (filled_.count({id.first, id.second, now[1].server}) != 0) continue;
    awaiting_[id] = now[1].server;
  }
  if (!awaiting_.empty()) return std::nullopt;
  return static_cast<uint32_t>(changes_.size());
}

EndedUnits ReplicaRouter::take_expired() {
  EndedUnits expired;
  const auto now = std::chrono::steady_clock::now();
  for (std::vector<Parked>& parked : parked_) {
    auto waiting =
        std::partition(parked.begin(), parked.end(), [&](const Parked& p) { return now - p.since < verdict_wait_; });
    for (auto it = waiting; it != parked.end(); ++it) expired.emplace_back(it->unit.request, it->error);
    parked.erase(waiting, parked.end());
  }
  return expired;
}

std::vector<std::shared_ptr<SubmittedRequest>> ReplicaRouter::take_parked() {
  std::vector<std::shared_ptr<SubmittedRequest>> requests;
  for (std::vector<Parked>& parked : parked_) {
    for (const Parked& p : parked) requests.push_back(p.unit.request);
    parked.clear();
  }
  return requests;
}

bool ReplicaRouter::lose(int server, RequestLanes& lanes, EndedUnits& ended, std::optional<uint32_t>& restored) {
  if (server < 0 || server >= static_cast<int>(lost_.size()) || lost_[static_cast<size_t>(server)]) return false;
  lost_[static_cast<size_t>(server)] = true;
  changes_.push_back(ps::ServerChange{server, false});
  // A server that rejoins later starts empty: its copies count again only
  // once filled again.
  for (auto it = filled_.begin(); it != filled_.end();) {
    it = std::get<2>(*it) == server ? filled_.erase(it) : std::next(it);
  }
  std::vector<LaneUnit> units;
  for (Parked& p : parked_[static_cast<size_t>(server)]) units.push_back(std::move(p.unit));
  parked_[static_cast<size_t>(server)].clear();
  for (LaneUnit& unit : lanes.take_queued(server)) units.push_back(std::move(unit));
  redirect(std::move(units), lanes, ended);
  to_drop_.push_back(server);
  restored = await_new_copies();
  return true;
}

std::vector<int> ReplicaRouter::take_drops() {
  std::vector<int> servers;
  if (to_drop_.empty()) return servers;
  servers.swap(to_drop_);
  dropping_ = true;
  return servers;
}

void ReplicaRouter::drops_done() {
  dropping_ = false;
  dropped_.notify_all();
}

bool ReplicaRouter::rejoining(int server, std::unique_lock<std::mutex>& lock, bool& drop_first) {
  if (server < 0 || server >= static_cast<int>(lost_.size()) || !lost_[static_cast<size_t>(server)]) return false;
  // Its predecessor's connection is dropped before the new one is made,
  // never after: by the caller, if the communication thread has not come to
  // it, else once that thread has.
  const auto pending = std::find(to_drop_.begin(), to_drop_.end(), server);
  if (pending != to_drop_.end()) {
    to_drop_.erase(pending);
    drop_first = true;
  }
  dropped_.wait(lock, [&] { return !dropping_; });
  return true;
}

std::optional<uint32_t> ReplicaRouter::rejoined(int server) {
  lost_[static_cast<size_t>(server)] = false;
  changes_.push_back(ps::ServerChange{server, true});
  return await_new_copies();
}

int ReplicaRouter::times_lost(int server) const {
  return static_cast<int>(std::count(changes_.begin(), changes_.end(), ps::ServerChange{server, false}));
}

std::vector<ps::PartHolder> ReplicaRouter::holders(int home) const {
  return ps::part_holders(home, static_cast<int>(lost_.size()), changes_);
}

}  // namespace dt::kvstore
