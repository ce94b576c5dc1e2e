// How a dist kvstore's data requests leave for the servers: the parts of
// each request queued per server, sent within a window, fused into messages,
// and answered into the caller's memory.
//  - Per server, two lanes: pushes (and everything else) and pulls, each in
//    (-priority, issue order) with a window of messages in flight
//    (RequestLanes). A dist_sync pull is held by its server until its round
//    completes, so the windows must stay within what a server accepts from
//    one connection (ps::kRequestsPerWorker), and pushes (which never wait)
//    must never queue behind pulls. Servers work in parallel, and a
//    high-priority request queued late overtakes what is still queued.
//  - A request up to 1 MiB is sent as far as the windows allow by the
//    submitting thread (no thread hand-off on the latency path); everything
//    else by the communication thread, as replies free the windows.
//  - Parts of one op queued for one server leave fused, up to ~4 MiB per
//    message.
//  - dist_sync: a pushpull leaves as one message only when the submitting
//    thread sends it at once with nothing queued for that server; otherwise
//    as a push and a pull of the same round (see submit()).
//  - Replies are copied out (compressed pulls decoded) on the link's threads. After abandon() nothing
//    touches caller memory any more.
//  - Replicated (DT_SERVER_REPLICATION=1, dist_sync only): a ReplicaRouter
//    (replica_router.h) places each part's copies on its holders and
//    decides what becomes of a lost server's units; the lanes
//    (request_lanes.h) know nothing of it. Without replication it is absent.
// It does not know keys' meaning: rounds, staging and what a failure means
// for the caller are the store's (DistKVStore).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <thread>
#include <utility>
#include <vector>

#include "core/error.h"
#include "kvstore/completion.h"
#include "kvstore/kvstore.h"
#include "kvstore/replica_router.h"
#include "kvstore/request_lanes.h"
#include "kvstore/waiting_messages.h"
#include "ps/compression/error_feedback.h"
#include "ps/compression/gradient_codec.h"
#include "ps/key_placement.h"
#include "ps/roles/worker_client.h"
#include "ps/transport/data_codec.h"

namespace dt::kvstore {

class RequestScheduler {
 public:
  // The connections the scheduler sends over: the worker's
  // ps::WorkerClient (link_to()), or a test's fake servers.
  class Link {
   public:
    virtual ~Link() = default;
    virtual int num_servers() const = 0;
    // As ps::WorkerClient::send: done runs exactly once, with the verified
    // reply or the error, on any thread; never throws. may_resend: the
    // request is marked DataRequest.may_resend and may be sent again.
    virtual void send(int server, ps::Message request, ps::WorkerClient::Done done, bool may_resend) = 0;
    // Whether requests that a server recognises when repeated are resent
    // when their reply is late (PS_RESEND).
    virtual bool resends() const { return false; }
    // The job's failure (a lost peer), once there is one.
    virtual std::optional<core::Error> failure() const = 0;
    // Ends the job for this worker: every later and pending send fails.
    virtual void fail(const core::Error& error) = 0;
    // Closes the connection to a server the job went on without: its
    // pending sends end with kClosed, later ones at once.
    virtual void drop_server(int server) = 0;
    // A server rejoined in a dropped one's place: later sends to its rank
    // reach it (ps::WorkerClient::reconnect_server). May throw.
    virtual void reconnect_server(const ps::NodeInfo& server) { (void)server; }
  };
  static std::unique_ptr<Link> link_to(ps::WorkerClient& client);

  // One part of one key moving in a request.
  using Part = RequestPart;
  using Work = std::vector<std::pair<ps::wire::DataOp, Part>>;

  // link: every reply handler it was given has run before the scheduler is
  // destroyed (the store closes the connections between close() and the
  // scheduler's end). worker_rank: what requests carry. sync: dist_sync's
  // rules for pushpulls and the mode init announces.
  // max_in_flight_per_server: 0 picks ps::kLaneWindow, at most that
  // (Error(kInvalidArgument) otherwise); tests pass 1 to make the priority
  // order observable. replicated: pushes and inits also go to each part's
  // replica (Error(kInvalidArgument) unless sync and 2 or more servers);
  // verdict_wait: how long a request whose connection dropped waits for
  // server_lost() before it fails with the connection's error.
  // Starts the communication thread.
  RequestScheduler(std::unique_ptr<Link> link, int worker_rank, bool sync, int max_in_flight_per_server,
                   bool replicated = false, std::chrono::milliseconds verdict_wait = std::chrono::seconds(10));
  // close().
  ~RequestScheduler();
  RequestScheduler(const RequestScheduler&) = delete;
  RequestScheduler& operator=(const RequestScheduler&) = delete;

  int window() const { return window_; }
  bool replicated() const { return router_ != nullptr; }
  // Called, from any thread, when a request waits for the verdict on a
  // server whose connection dropped: the store asks the scheduler for news
  // at once (ClusterMember::ask_for_news) instead of at the next heartbeat.
  // Set it before the first submit.
  void on_suspected_loss(std::function<void()> ask);

  // Queues work as one request at priority (larger first) and returns its
  // completion, finished once every part was answered: with the first
  // error; else on_success (may be null) runs, once, on the thread of the
  // last reply, unless abandon() released caller memory (then kClosed), and
  // finishes it with its Error, if any. What src, dst and shape point to
  // must stay alive until the request finished.
  std::shared_ptr<Completion> submit(const Work& work, int priority, std::function<void()> on_success);

  // From now on pushed float32 parts are encoded with config (with its
  // error feedback, per part) and sent with their encoding; other dtypes
  // and inits go as they are. Pulled parts that a server sent encoded (a
  // dist_sync round's sum when the workers run the optimizer) are decoded
  // with it into their float32 outputs. Call before the first push.
  void set_compression(const ps::compression::CompressionConfig& config);

  // Replicated: the job goes on without server (the scheduler said so).
  // Its queued and failed pushes count as delivered, its pulls go to their
  // replicas, and so do later requests; the communication thread then has
  // the link drop it (what is in flight to it comes back to the replicas).
  // Ignored when not replicated or after close(). Any thread; never waits
  // for the network (heartbeat threads call it).
  void server_lost(int server);
  // Replicated: a server rejoined the job in a lost one's place, empty
  // (the scheduler announced it; ps::ServerChange). The link reconnects to
  // it (after dropping its predecessor's connection, if that is still to
  // come), and from now on it takes new copies of the parts left with one
  // holder (ps::part_holders), filled as it is pushed to. Any thread; the
  // changes must come in the scheduler's order (ClusterMember::
  // on_server_change).
  void server_rejoined(const ps::NodeInfo& server);
  // Whether server still serves this worker's requests (not server_lost()).
  bool server_alive(int server) const;
  // How many times server was lost so far: a request sent to it that
  // failed was cut by a loss when this grew since, even if the server has
  // rejoined by now.
  int times_lost(int server) const;
  // The servers holding a part placed on server now (ps::part_holders);
  // just server when not replicated.
  std::vector<int> holders(int server) const;
  // Replicated: report(changes) runs (on any thread, once per occasion)
  // when every part this worker initialised that got a new copy after the
  // job's first `changes` server changes (losses and rejoins) has it filled (its new holder acknowledged
  // a push of it: a new copy answers pushes only once it holds the part),
  // right at a loss when no part needs one. The scheduler takes a further
  // server loss as survivable by the new copies only once every worker said
  // so (ClusterMember::report_copies_restored). Set it before the first
  // submit.
  void on_copies_restored(std::function<void(uint32_t changes)> report);

  // Stops the communication thread; what is still queued fails with
  // kClosed. Messages in flight are answered by the link. Idempotent.
  void close();
  // Fails the link with error and releases caller memory: no reply or send
  // touches it afterwards; queued requests fail with the link's failure.
  void abandon(const core::Error& error);

  // The latest reply or submission: a wait measures its patience from here,
  // so a request queued behind a long backlog does not time out while
  // others move.
  std::chrono::steady_clock::time_point last_progress() const;
  // The messages sent and not yet answered (the stall inspector reads them).
  const WaitingMessages& waiting() const { return waiting_; }
  // The requests submitted since the last call (some that finished may be
  // left out).
  std::vector<std::shared_ptr<Completion>> take_outstanding();
  // The first request that failed since the last call and was not
  // reported() (nobody waited for it), or null.
  std::shared_ptr<Completion> take_unreported();
  // Its error reached the caller: take_unreported() does not return it.
  void reported(const std::shared_ptr<Completion>& request);

 private:
  void communicate();
  // Takes every queued unit out of the lanes, and every parked one (mutex_
  // held).
  std::vector<std::shared_ptr<SubmittedRequest>> drop_queued();
  void send_batch(size_t lane, std::vector<LaneUnit> units);
  void on_reply(size_t lane, const std::vector<LaneUnit>& units, std::optional<core::Error> error,
                const ps::Frame* reply);
  void finish_unit(const std::shared_ptr<SubmittedRequest>& request, const std::optional<core::Error>& error);
  void finish_ended(const EndedUnits& ended);

  const std::unique_ptr<Link> link_;
  const int worker_rank_;
  const bool sync_;
  const int window_;

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  RequestLanes lanes_;
  // Null unless replicated: guarded by mutex_ (see replica_router.h).
  const std::unique_ptr<ReplicaRouter> router_;
  bool stop_ = false;
  std::vector<std::shared_ptr<Completion>> outstanding_;  // submitted, maybe not finished
  std::shared_ptr<Completion> unreported_;               // failed, nobody waited for it yet
  std::chrono::steady_clock::time_point last_progress_;
  // Reply handlers and the senders hold it shared while they touch caller
  // memory; abandon() takes it exclusively, so none does afterwards.
  std::shared_mutex memory_mutex_;
  bool memory_released_ = false;
  // Guarded by mutex_; null without compression. A part's pushes never
  // overlap (a key's request waits for its previous one), as ErrorFeedback
  // requires.
  std::shared_ptr<const ps::compression::GradientCodec> codec_;
  std::shared_ptr<ps::compression::ErrorFeedback> feedback_;
  WaitingMessages waiting_;
  std::thread thread_;
};

}  // namespace dt::kvstore
