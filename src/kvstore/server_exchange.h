// One request to every server still serving a dist kvstore's worker, all in
// flight at once: the store's commands (optimizer, settings, compression),
// its optimizer state, a joining worker's questions. With replicated servers
// a server lost meanwhile is left out rather than failing the exchange: once
// the scheduler's verdict came, the request goes again to the servers that
// did not answer and are still there (every such request is idempotent).
// Threading: run() may be called from any thread; on_reply runs on transport
// threads, one reply at a time per server.
#pragma once

#include <functional>
#include <vector>

#include "core/error.h"
#include "kvstore/request_scheduler.h"
#include "ps/roles/worker_client.h"

namespace dt::kvstore {

class ServerExchange {
 public:
  // verdict_wait: how long a failed exchange waits for the scheduler to
  // declare one of its servers lost (2 x heartbeat_timeout_s, as
  // DistKVStore::report() waits for a lost peer's name). client and
  // scheduler outlive this.
  ServerExchange(ps::WorkerClient& client, const RequestScheduler& scheduler, std::chrono::milliseconds verdict_wait)
      : client_(client), scheduler_(scheduler), verdict_wait_(verdict_wait) {}

  // request(server) makes each server's request; on_reply(server, reply)
  // takes each answer. Throws the first error but for the losses above.
  void run(const std::function<ps::Message(int server)>& request,
           const std::function<void(int server, const ps::Frame& reply)>& on_reply) const;

 private:
  // Whether error (a dropped connection, a timeout) came from one of
  // servers that the scheduler has declared lost by now, waiting up to
  // verdict_wait_ for its verdict; throws the job's failure. lost_before:
  // each server's RequestScheduler::times_lost when the requests were sent
  // (a server lost and rejoined since counts as lost).
  bool lost_server_among(const std::vector<int>& servers, const std::vector<int>& lost_before,
                         const core::Error& error) const;

  ps::WorkerClient& client_;
  const RequestScheduler& scheduler_;
  const std::chrono::milliseconds verdict_wait_;
};

}  // namespace dt::kvstore
