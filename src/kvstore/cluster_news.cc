#include "kvstore/cluster_news.h"

#include <atomic>
#include <mutex>
#include <string>

#include "core/error.h"
#include "core/log.h"

namespace dt::kvstore {

using core::Error;
using core::ErrorCode;

// The client as the member's heartbeat thread reaches it: the store closes
// the client while that thread still runs, so the thread's callbacks go
// through this, under its lock, and find no client once it is gone.
struct ClusterNews::Shared {
  std::mutex mutex;
  ps::WorkerClient* client = nullptr;  // null once the store closed it
  std::atomic<bool> closing{false};

  void fail(const Error& error) {
    std::lock_guard<std::mutex> lock(mutex);
    if (client != nullptr) client->fail(error);
  }
};

ClusterNews::ClusterNews(ps::ClusterMember& member, ps::WorkerClient& client, RequestScheduler& scheduler)
    : shared_(std::make_shared<Shared>()) {
  shared_->client = &client;
  ps::ClusterMember* m = &member;
  // A dropped connection to a replicated server: the verdict comes with the
  // next heartbeat reply, asked for at once.
  scheduler.on_suspected_loss([m] { m->ask_for_news(); });
  // Replicated: a server's connection that closes is most likely a lost
  // server. Every worker asks for news at once, not only those with a
  // request in flight to it: a new copy waits for every worker's push, and
  // a worker that learned of the loss only at its next heartbeat held the
  // others up until then (up to the heartbeat interval).
  const std::shared_ptr<Shared> shared = shared_;
  if (scheduler.replicated()) {
    client.on_disconnect([m, shared](int) {
      if (!shared->closing.load()) m->ask_for_news();
    });
  }
  // The scheduler weighs a further server loss with the parts' new copies
  // once every worker has seen its own filled.
  scheduler.on_copies_restored([m](uint32_t losses) { m->report_copies_restored(losses); });
  member.on_lost([shared](const ps::LostNode& lost) { shared->fail(Error(ErrorCode::kPeerLost, lost.message())); });
  // A server the job goes on without, or one that rejoined in its place
  // (the scheduler's DT_SERVER_REPLICATION=1), in the order the scheduler
  // saw them: every node derives the parts' holders from that order.
  RequestScheduler* s = &scheduler;
  member.on_server_change([shared, s](const ps::ClusterMember::ServerNews& news) {
    if (!s->replicated()) {
      const std::string what = news.change.rejoined ? news.rejoined.describe() + " rejoined the job"
                                                    : news.lost.message();
      shared->fail(Error(ErrorCode::kPeerLost, what + " (the scheduler replicates servers, this worker does not: "
                                                      "DT_SERVER_REPLICATION differs between them)"));
      return;
    }
    if (news.change.rejoined) {
      core::log(core::LogLevel::kInfo, "worker",
                news.rejoined.describe() + " rejoined the job; it takes new copies of the key parts left with one "
                                           "holder, filled as they are pushed");
      s->server_rejoined(news.rejoined);
      return;
    }
    core::log(core::LogLevel::kInfo, "worker",
              news.lost.message() + "; its key parts are pulled from their other holders, and get new copies "
                                    "where a server is left for them");
    s->server_lost(news.lost.rank);
  });
}

void ClusterNews::closing() { shared_->closing = true; }

void ClusterNews::forget_client() {
  std::lock_guard<std::mutex> lock(shared_->mutex);
  shared_->client = nullptr;
}

}  // namespace dt::kvstore
