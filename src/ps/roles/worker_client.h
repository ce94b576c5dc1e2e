// A worker's connections to the servers and the exchanges it runs over them:
// a batch of requests to any servers, all in flight at once, whose replies
// are handled as they arrive (copied out on the transport's threads, so the
// copies of one batch overlap the transfers of the others), and one bounded
// wait for all of them. A lost peer (fail()) ends every wait with its error.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <vector>

#include "core/error.h"
#include "ps/job/job_config.h"
#include "ps/roles/node_table.h"
#include "ps/transport/frame.h"
#include "ps/transport/request_client.h"

namespace dt::ps {

// Which of a server's URLs a worker dials: ipc when the server shares the
// worker's host (kAuto), or always tcp / ipc (benchmarks compare them).
// An inproc URL, when the server offers one, is always taken.
enum class DataTransport { kAuto, kTcp, kIpc };
// "auto", "tcp", "ipc"; Error(kInvalidArgument) otherwise.
DataTransport data_transport_from_name(const std::string& name);
// The URL of server's data plane that a node on node_host dials: inproc when
// offered, else ipc or tcp as transport says. Error(kProtocol) when server
// offers none.
std::string data_url_of(const NodeInfo& server, const std::string& node_host, DataTransport transport);

class WorkerClient {
 public:
  // Runs on a transport thread for each successful DataReply, with the
  // index the request was sent under. May throw: the exchange fails.
  using OnReply = std::function<void(size_t index, const Frame& reply)>;

  // security: the job's (JobConfig::security), for every server connection.
  WorkerClient(const NodeTable& table, const std::string& node_host, DataTransport transport,
               const PsOptions& options, const net::TransportSecurity& security);
  ~WorkerClient();
  WorkerClient(const WorkerClient&) = delete;
  WorkerClient& operator=(const WorkerClient&) = delete;

  int num_servers() const { return num_servers_; }

  // One batch of requests. Destroying it without wait() (an exception on the
  // sending side) still waits for the handlers that are running, so they
  // never touch the caller's memory afterwards.
  class Exchange {
   public:
    Exchange(WorkerClient& client, OnReply on_reply);
    ~Exchange();
    Exchange(const Exchange&) = delete;
    Exchange& operator=(const Exchange&) = delete;
    // Sends at once; the reply is handled with index = number of earlier
    // sends: a DataReply with status 0, or an OptimizerState (the typed
    // answer to GetOptimizerState); a DataReply's error status is the error.
    void send(int server, Message request);
    // Until every reply is handled: throws the first error (a lost peer's
    // kPeerLost in preference to the network error it caused), kTimedOut
    // after request_timeout_s.
    void wait();

   private:
    struct State;
    WorkerClient& client_;
    std::shared_ptr<State> state_;
    size_t sent_ = 0;
  };

  // One request outside any exchange, for callers that keep their own
  // windows and priorities (the kvstore's communication thread). done runs
  // exactly once, on a transport thread (or on this one when the client has
  // failed): with the verified DataReply frame and no error, or with the
  // error: the transport's, a reply that fails verification, or the
  // server's error status. Never throws.
  using Done = std::function<void(std::optional<core::Error> error, const Frame* reply)>;
  // may_resend: the request is marked DataRequest.may_resend; with
  // PsOptions::resend_timeout_s set it is sent again when its reply is late.
  void send(int server, Message request, Done done, bool may_resend = false);
  // Whether may_resend requests are resent (PS_RESEND).
  bool resends() const { return options_.resend_timeout_s > 0; }

  // The job went on without server (DT_SERVER_REPLICATION=1): its pending
  // requests end with kClosed, and so do later ones, at once; its socket is
  // left alone until the process ends (RequestClient::abandon).
  void drop_server(int server);
  // A server rejoined the job in a dropped one's place (DT_SERVER_
  // REPLICATION=1): later requests to its rank go to it, over a new
  // connection (with the on_disconnect callback). Error(kProtocol) when it
  // offers no usable URL.
  void reconnect_server(const NodeInfo& server);
  // Called (on an nng thread: keep it short) each time a connection to a
  // server closes while its client is open, with the server's rank. Set it
  // before the first request.
  void on_disconnect(const std::function<void(int server)>& callback);
  // A node was lost: every current and later exchange fails with error.
  void fail(const core::Error& error);
  // Throws the recorded failure, if any.
  void check() const;
  std::optional<core::Error> failure() const;
  const PsOptions& options() const { return options_; }
  // What this worker's data plane moved, summed over its servers.
  core::Traffic traffic() const;

 private:

  // The connection to server now; it stays valid until the client ends
  // (a replaced one is kept, abandoned, in replaced_).
  RequestClient& connection(int server) const;

  PsOptions options_;
  const int num_servers_;
  const std::string node_host_;
  const DataTransport transport_;
  const net::TransportSecurity security_;
  mutable std::shared_mutex servers_mutex_;  // guards servers_, replaced_, disconnect_callback_
  std::vector<std::unique_ptr<RequestClient>> servers_;
  std::vector<std::unique_ptr<RequestClient>> replaced_;
  std::function<void(int server)> disconnect_callback_;
  mutable std::mutex mutex_;
  std::optional<core::Error> failure_;
  std::atomic<bool> dropped_any_{false};  // drop_server() was called
};

}  // namespace dt::ps
