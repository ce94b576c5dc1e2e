// A server's side of new copies (DT_SERVER_REPLICATION=1; ServerKeyStore,
// "New copies"): while it lives, when its store asks for a part's state, the
// filler asks the server that holds the part (DataOp PartState) and installs
// the answer.
//
// The store asks with the part's lock held, so the filler only queues the
// request there; its own thread sends it, and the reply is installed on the
// transport's thread. A request that fails (the source lost, a refusal, the
// request timeout) is logged, with why, and the part waits for the workers'
// next pushes (ServerKeyStore::fail_fill); the workers never counted it as
// filled.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "net/transport_security.h"
#include "ps/job/job_config.h"
#include "ps/roles/node_table.h"
#include "ps/server/job_settings.h"
#include "ps/server/key_store.h"
#include "ps/transport/request_client.h"

namespace dt::ps {

class PartFiller {
 public:
  // node_host: this server's host (it reaches the others as a worker there
  // would). Fills wait for set_servers().
  PartFiller(ServerKeyStore& store, const std::string& node_host, const PsOptions& options,
             const net::TransportSecurity& security);
  // Once registered: this server's rank and the job's servers
  // (NodeTable::servers).
  void set_servers(int rank, std::vector<NodeInfo> servers);
  // Stops the thread and abandons the connections: a request in flight
  // ends (kClosed) and fails its part.
  ~PartFiller();
  PartFiller(const PartFiller&) = delete;
  PartFiller& operator=(const PartFiller&) = delete;

  // Registered with the store (ServerKeyStore::on_fill_wanted) while the
  // filler lives: queues the request; never blocks.
  void want(const ServerKeyStore::FillRequest& request);
  // The job went on without server: fills asked of it fail now, and later
  // ones at once, instead of waiting for the request timeout. Never blocks
  // (heartbeat threads call it).
  void server_lost(int server);
  // server rejoined in a lost one's place: later fills from its rank reach
  // it at its new address. Never blocks.
  void server_rejoined(const NodeInfo& server);
  // Called with the source's learning rate and gradient rescale when a
  // fill brings them (the source has an optimizer), before the part is
  // installed. Set it before the first fill.
  void on_source_numbers(std::function<void(double learning_rate, double rescale_grad)> take);

  // This server rejoined the running job (NodeTable.joined_running_job):
  // the job's settings (the ServerSettings message's answer), from the first of
  // table's other servers that answers within deadline each.
  // Error(kPeerLost) when none does. Any thread; needs no set_servers().
  JobSettings job_settings(const NodeTable& table, std::chrono::milliseconds deadline) const;

 private:
  void run();
  void send(const ServerKeyStore::FillRequest& request);
  // The reply to request: installs it, or fails the part with why not.
  void take(const ServerKeyStore::FillRequest& request, std::optional<core::Error> error, Message reply);
  // Fails the part's held pushes with error (never throws: it runs on the
  // transport's threads).
  void fail(const ServerKeyStore::FillRequest& request, const core::Error& error) noexcept;
  RequestClient& client_of(int server);

  ServerKeyStore& store_;
  const std::string node_host_;
  const PsOptions options_;
  const net::TransportSecurity security_;

  std::mutex mutex_;  // guards what follows
  std::condition_variable wake_;
  int rank_ = -1;                  // set_servers()
  std::vector<NodeInfo> servers_;  // set_servers()
  std::deque<ServerKeyStore::FillRequest> queue_;
  std::vector<int> lost_;       // server_lost(), in order
  size_t lost_handled_ = 0;     // how many of lost_ the filler's thread has acted on
  std::vector<bool> gone_;      // by rank: lost and not rejoined since
  std::function<void(double, double)> take_numbers_;
  // Connections to lost servers, abandoned (see ~PartFiller), kept until the end.
  std::vector<std::unique_ptr<RequestClient>> abandoned_;
  bool stop_ = false;
  std::map<int, std::unique_ptr<RequestClient>> clients_;  // used on the filler's thread only
  std::thread thread_;  // last: starts once the rest exists
};

}  // namespace dt::ps
