// What a dist kvstore's worker does with the news its ClusterMember's
// heartbeats bring, and with dropped server connections: a lost peer fails
// the data client (and with it every pending and later request); a
// replicated server's loss or rejoin goes to the request scheduler, which
// moves the parts' requests to their holders. The store's plain path knows
// none of this: the companion is wired once, at construction.
// Threading: the callbacks run on the member's heartbeat thread and on
// transport threads; the calls below on the store's thread.
#pragma once

#include <memory>

#include "kvstore/request_scheduler.h"
#include "ps/roles/cluster_member.h"
#include "ps/roles/worker_client.h"

namespace dt::kvstore {

class ClusterNews {
 public:
  // Sets member's, client's and scheduler's callbacks. All three outlive
  // this object's callbacks: the member's heartbeat thread may still run
  // after forget_client(), and then finds no client.
  ClusterNews(ps::ClusterMember& member, ps::WorkerClient& client, RequestScheduler& scheduler);

  // The store is closing: servers closing their connections now are the
  // job ending, not news to ask for.
  void closing();
  // Before the client is destroyed: a loss heard of from now on finds no
  // client (a callback under way ends first).
  void forget_client();

 private:
  struct Shared;
  std::shared_ptr<Shared> shared_;
};

}  // namespace dt::kvstore
