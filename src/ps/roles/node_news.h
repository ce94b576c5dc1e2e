// What a cluster member has heard of the other nodes, from its heartbeat
// replies and its connection to the scheduler: the nodes lost (the job
// ends), the ones the job goes on without (departed), the servers' changes in
// order, the workers waiting to be let in, and the end of the job. Calls the
// callbacks registered for each kind of news on the thread that brings it
// (the heartbeat thread), outside its lock. Thread-safe.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <vector>

#include "ps/roles/node_table.h"
#include "ps/transport/protocol_generated.h"

namespace dt::ps {

// DT_SERVER_REPLICATION=1: one of the job's server changes, a departed
// server (change.rejoined false: lost set) or a server that rejoined in a
// departed one's place (rejoined set, with its new address).
struct ServerNews {
  ServerChange change;
  LostNode lost;      // change.rejoined false
  NodeInfo rejoined;  // change.rejoined true
};

class NodeNews {
 public:
  using LostCallback = std::function<void(const LostNode&)>;
  using ServerCallback = std::function<void(const ServerNews&)>;

  // A node lost (once per role and rank): the job ends.
  void add_lost(const LostNode& node);
  // A heartbeat reply from the scheduler, to the node self_role self_rank:
  // losses, departures and rejoins as news in order, the workers awaiting
  // admission, the end of the job.
  void take_reply(const wire::HeartbeatReply& reply, Role self_role, int self_rank);

  // Each calls callback once per item of news, those so far at once.
  void on_lost(LostCallback callback);
  void on_departed(LostCallback callback);
  void on_server_change(ServerCallback callback);

  std::vector<LostNode> lost() const;
  std::vector<LostNode> departed() const;
  bool any_lost() const;
  // Lost or departed nodes: the job had a failover.
  bool any_loss_or_departure() const;
  // Error(kPeerLost) with the first lost node's message, if any.
  void check() const;
  bool job_ended() const;  // the scheduler said so
  uint32_t awaiting_admission() const;
  // HeartbeatReply.stalled_on, latest: the workers the servers' rounds have
  // waited for past DT_STALL_WARNING_S.
  std::vector<int> stalled_on() const;

  // Returns once a node is lost, or after timeout_s.
  void wait_for_loss(double timeout_s) const;
  // Returns once the scheduler is lost (gone, or silent), or after timeout_s.
  void wait_for_scheduler_lost(double timeout_s) const;
  // Returns once the job ended; Error(kPeerLost) once a node is lost.
  void wait_for_end() const;

 private:
  // Returns whether the node is news.
  bool add_departed(const LostNode& node, Role self_role, int self_rank);
  void add_server_news(const ServerNews& news);
  // A heartbeat reply's departed and rejoined nodes, news in order.
  void take_changes(const wire::HeartbeatReply& reply, Role self_role, int self_rank);
  // Adds callback, then calls it with the news so far.
  template <typename Item, typename Callback>
  void subscribe(std::vector<Callback>& callbacks, const std::vector<Item>& so_far, Callback callback);

  mutable std::mutex mutex_;
  mutable std::condition_variable cv_;
  std::vector<LostNode> lost_;
  std::vector<LostCallback> lost_callbacks_;
  std::vector<LostNode> departed_;
  std::vector<LostCallback> departed_callbacks_;
  std::vector<ServerNews> server_news_;
  size_t rejoins_seen_ = 0;  // entries of HeartbeatReply.rejoined taken
  std::vector<ServerCallback> server_callbacks_;
  uint32_t awaiting_admission_ = 0;  // HeartbeatReply.awaiting_admission, latest
  std::vector<int> stalled_on_;      // HeartbeatReply.stalled_on, latest
  bool job_ended_ = false;
};

}  // namespace dt::ps
