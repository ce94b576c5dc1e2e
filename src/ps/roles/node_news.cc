#include "ps/roles/node_news.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <string>

#include "core/error.h"

namespace dt::ps {

using core::Error;
using core::ErrorCode;

template <typename Item, typename Callback>
void NodeNews::subscribe(std::vector<Callback>& callbacks, const std::vector<Item>& so_far, Callback callback) {
  std::vector<Item> already;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    callbacks.push_back(callback);
    already = so_far;
  }
  for (const Item& item : already) callback(item);
}

void NodeNews::add_lost(const LostNode& node) {
  std::vector<LostCallback> to_call;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const LostNode& l : lost_) {
      if (l.role == node.role && l.rank == node.rank) return;
    }
    lost_.push_back(node);
    to_call = lost_callbacks_;
  }
  cv_.notify_all();
  for (const LostCallback& cb : to_call) cb(node);
}

bool NodeNews::add_departed(const LostNode& node, Role self_role, int self_rank) {
  // A worker that joined the running job in the place of a lost one hears
  // of its predecessor's loss (same rank, another process): not its own.
  if (node.role == self_role && node.rank == self_rank && (node.pid == 0 || node.pid == ::getpid())) {
    // The others go on without this node: a worker must not push into
    // their rounds any more, nor a server answer for parts its replicas now
    // serve.
    LostNode self = node;
    self.reason = "the scheduler declared this " + std::string(role_name(node.role)) + " lost (" + node.reason +
                  ") and the job goes on without it";
    add_lost(self);
    return false;
  }
  std::vector<LostCallback> to_call;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const LostNode& d : departed_) {
      // A rank lost again after a worker joined in its place is news.
      if (d.role == node.role && d.rank == node.rank && d.pid == node.pid) return false;
    }
    departed_.push_back(node);
    to_call = departed_callbacks_;
  }
  for (const LostCallback& cb : to_call) cb(node);
  return true;
}

void NodeNews::add_server_news(const ServerNews& news) {
  std::vector<ServerCallback> to_call;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    server_news_.push_back(news);
    to_call = server_callbacks_;
  }
  for (const auto& cb : to_call) cb(news);
}

void NodeNews::take_reply(const wire::HeartbeatReply& r, Role self_role, int self_rank) {
  if (r.lost() != nullptr) {
    for (const auto* l : *r.lost()) add_lost(read_lost_node(*l));
  }
  take_changes(r, self_role, self_rank);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    awaiting_admission_ = r.awaiting_admission();
    stalled_on_.clear();
    if (r.stalled_on() != nullptr) stalled_on_.assign(r.stalled_on()->begin(), r.stalled_on()->end());
    if (r.shutdown()) job_ended_ = true;
  }
  if (r.shutdown()) cv_.notify_all();
}

void NodeNews::take_changes(const wire::HeartbeatReply& r, Role self_role, int self_rank) {
  // Departures and rejoins merged as server_changes() orders them: a rejoin
  // that came after d server departures is news after the d-th.
  std::vector<RejoinedServer> rejoined;
  if (r.rejoined() != nullptr) {
    for (const auto* b : *r.rejoined()) rejoined.push_back(read_rejoined_server(*b));
  }
  uint32_t departures = 0;
  const auto rejoins_up_to = [&](uint32_t count) {
    for (; rejoins_seen_ < rejoined.size() && rejoined[rejoins_seen_].after_departures <= count; ++rejoins_seen_) {
      const RejoinedServer& b = rejoined[rejoins_seen_];
      add_server_news(ServerNews{ServerChange{b.node.rank, true}, LostNode{}, b.node});
    }
  };
  if (r.departed() != nullptr) {
    for (const auto* l : *r.departed()) {
      const LostNode node = read_lost_node(*l);
      if (node.role == Role::kServer) rejoins_up_to(departures);
      const bool news = add_departed(node, self_role, self_rank);
      if (node.role != Role::kServer) continue;
      ++departures;
      // (A server rejoining hears of its predecessor's departure too, as
      // news: another process. That change is in the sequence every node
      // counts.)
      if (news) add_server_news(ServerNews{ServerChange{node.rank, false}, node, NodeInfo{}});
    }
  }
  rejoins_up_to(~uint32_t{0});
}

void NodeNews::on_lost(LostCallback callback) { subscribe(lost_callbacks_, lost_, std::move(callback)); }

void NodeNews::on_departed(LostCallback callback) {
  subscribe(departed_callbacks_, departed_, std::move(callback));
}

void NodeNews::on_server_change(ServerCallback callback) {
  subscribe(server_callbacks_, server_news_, std::move(callback));
}

std::vector<LostNode> NodeNews::lost() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return lost_;
}

std::vector<LostNode> NodeNews::departed() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return departed_;
}

bool NodeNews::any_lost() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return !lost_.empty();
}

bool NodeNews::any_loss_or_departure() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return !departed_.empty() || !lost_.empty();
}

void NodeNews::check() const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!lost_.empty()) throw Error(ErrorCode::kPeerLost, lost_.front().message());
}

bool NodeNews::job_ended() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return job_ended_;
}

std::vector<int> NodeNews::stalled_on() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stalled_on_;
}

uint32_t NodeNews::awaiting_admission() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return awaiting_admission_;
}

void NodeNews::wait_for_loss(double timeout_s) const {
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait_for(lock, std::chrono::duration<double>(timeout_s), [&] { return !lost_.empty(); });
}

void NodeNews::wait_for_scheduler_lost(double timeout_s) const {
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait_for(lock, std::chrono::duration<double>(timeout_s), [&] {
    return std::any_of(lost_.begin(), lost_.end(), [](const LostNode& l) { return l.role == Role::kScheduler; });
  });
}

void NodeNews::wait_for_end() const {
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait(lock, [&] { return job_ended_ || !lost_.empty(); });
  if (!lost_.empty()) throw Error(ErrorCode::kPeerLost, lost_.front().message());
}

}  // namespace dt::ps
