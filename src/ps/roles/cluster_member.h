// A server's or worker's membership in the job: registration with the
// scheduler, its rank and the node table, barriers, heartbeats that bring news
// of lost nodes (kept in node_news.h), and the clean goodbye. Every wait has
// a deadline from PsOptions. Thread-safe; one heartbeat thread of its own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/status_line.h"
#include "ps/job/job_config.h"
#include "ps/roles/node_news.h"
#include "ps/roles/node_table.h"

namespace dt::ps {

class ClusterMember {
 public:
  using LostCallback = std::function<void(const LostNode&)>;

  // Registers job.role (worker or server) with the scheduler at job.root_url,
  // retrying the connection, and returns once the node table arrived.
  // data_urls: where this node serves (servers). Throws Error(kTimedOut)
  // "scheduler at <url> unreachable for <t> s" or "... did not publish the node
  // table within <t> s"; the scheduler's own error replies (kInvalidArgument
  // for a taken DMLC_WORKER_ID or mismatched counts, kProtocol for a version
  // mismatch, kPeerLost) as they are. Starts the heartbeat thread.
  // before_heartbeats (may be empty) runs with the node table before the
  // first heartbeat: a server rejoining a running job
  // (NodeTable.joined_running_job) fetches the job's settings there, since
  // the scheduler announces it to the others at its first heartbeat. What
  // it throws, the constructor throws.
  ClusterMember(const JobConfig& job, const PsOptions& options, std::vector<std::string> data_urls = {},
                const std::function<void(const NodeTable&)>& before_heartbeats = {});
  // Stops heartbeats (without Shutdown: call shutdown() for a clean exit).
  ~ClusterMember();
  ClusterMember(const ClusterMember&) = delete;
  ClusterMember& operator=(const ClusterMember&) = delete;

  Role role() const;
  int rank() const;
  const NodeTable& table() const;

  // Workers: returns once every worker entered the same barrier. Throws
  // Error(kPeerLost) naming a lost node, kTimedOut after request_timeout_s.
  void barrier();
  // Workers: a barrier that also exchanges a small blob (an NCCL unique id,
  // say): returns every worker's data, indexed by rank. Counts as one
  // barrier, so all workers must call it at the same point of their barrier
  // sequence (Error(kBadState) when some call barrier() there instead).
  // Error(kInvalidArgument) for data above kMaxGatherBytes; kProtocol when
  // the scheduler is too old to gather; otherwise as barrier().
  static constexpr size_t kMaxGatherBytes = 64 * 1024;
  std::vector<std::vector<uint8_t>> allgather(const std::vector<uint8_t>& data);
  // Workers, DT_WORKER_LOSS=continue: an all-gather among the workers still
  // in the job, at `generation` = the workers the job lost in all (the
  // departed() workers this node knows of) plus the workers it let in
  // (admission() below). Not a numbered barrier: it may run beside
  // barrier() on another thread. Returns each worker's data by its rank.
  // Error(kBadState) when the scheduler counts another generation (a loss
  // this node has not heard of yet, or one during the regroup: ask again at
  // the new count); otherwise as allgather().
  std::map<int, std::vector<uint8_t>> regroup(uint64_t generation, const std::vector<uint8_t>& data);
  // Workers of a job without servers, DT_WORKER_LOSS=continue: the workers
  // in the job let in the workers that joined it in departed ones' places
  // (NodeTable.joined_running_job), which wait here from their start. The
  // workers in the job call it at the same point, at `generation` (their
  // group's: departures plus workers let in); a joined one's generation is
  // ignored. Returns once every worker in the job and every one waiting is
  // there: each one's data by rank, and the job's generation and worker
  // departures with them in it. Error(kBadState) when the job lost a worker
  // meanwhile (regroup first; a joined one asks again), kClosed to a joined
  // worker when the job finished first; otherwise as allgather().
  struct Gathered {
    std::map<int, std::vector<uint8_t>> data;
    uint64_t generation = 0;
    uint64_t departures = 0;
  };
  Gathered admission(uint64_t generation, const std::vector<uint8_t>& data);
  // Workers that joined and wait to be let in, as the latest heartbeat
  // reply said.
  uint32_t workers_awaiting_admission() const;

  // Calls callback once for every node lost (already lost ones at once), on
  // the heartbeat thread: keep it short (fail pending requests, wake waiters).
  // The scheduler itself going silent counts as a lost node (role scheduler).
  void on_lost(LostCallback callback);
  std::vector<LostNode> lost() const;
  // DT_WORKER_LOSS=continue: calls callback once for every worker the job
  // goes on without (already departed ones at once), on the heartbeat
  // thread. Servers stop waiting for its pushes. Likewise for a server under
  // DT_SERVER_REPLICATION=1 (role kServer): workers move its parts to their
  // replicas. Such a node is not in lost(); this node itself departed (it
  // stalled past the heartbeat timeout, say) is a loss of its own, in lost().
  void on_departed(LostCallback callback);
  std::vector<LostNode> departed() const;
  // DT_SERVER_REPLICATION=1: the job's server changes, each a departed
  // server (lost set) or a server that rejoined in a departed one's place
  // (rejoined set, with its new address), in the order every node derives
  // the parts' holders from (node_table.h's server_changes). Calls callback
  // once per change, in that order (the ones so far at once), on the
  // heartbeat thread.
  using ServerNews = dt::ps::ServerNews;  // node_news.h
  void on_server_change(std::function<void(const ServerNews&)> callback);
  // Throws Error(kPeerLost) with the first lost node's message, if any.
  void check_peers() const;
  // Returns once the scheduler is gone (its connection closed, or it went
  // silent), or after timeout_s: a node whose job was lost before it took
  // part ends after the scheduler, so that a launcher sees the job's own
  // failure first instead of one node's.
  void wait_for_scheduler_gone(double timeout_s) const;
  // Any thread; returns at once: the heartbeat thread sends its next
  // heartbeat now, not at the end of the interval, and then every 50 ms
  // for half a second (the scheduler may see the loss a moment after this
  // node), so that the news of a loss a broken link hints at arrives
  // within a round trip or two.
  void ask_for_news();
  // A worker of a replicated job: every part it initialised had its new
  // copy filled after the job's first `losses` server losses (sent with its
  // heartbeats, the next one at once; a lower count than before is
  // ignored). Any thread.
  void report_copies_restored(uint32_t losses);
  // The stall inspector: a server's rounds have waited past
  // DT_STALL_WARNING_S for these workers (empty: none), sent with its
  // heartbeats, the next one at once. Any thread.
  void report_stalled_on(const std::vector<int>& workers);
  // The workers the servers' rounds wait for, as the latest heartbeat reply
  // said (a worker's stall warning names them).
  std::vector<int> stalled_workers() const;
  // dtrun's live summary relayed through the scheduler (DT_STATUS_EVERY_S
  // under a launcher of other hosts, core/status_file.h): the latest
  // numbers go with every heartbeat (Heartbeat.worker_status or
  // server_status), and a worker's once more before its Shutdown, so the
  // scheduler's copy ends with its whole run. A worker reports its numbers
  // after each batch (any thread); a server gives a source that the
  // heartbeat thread reads (it must outlive this member). Never called when
  // the summary is off: heartbeats then carry nothing more.
  void report_status(const core::WorkerStatus& numbers);
  void report_status_from(std::function<core::ServerStatus()> source);

  // Servers: blocks until the scheduler says the job ended (returns) or a node
  // is lost (throws Error(kPeerLost)); a silent scheduler is such a loss, so
  // this wait ends within heartbeat_timeout_s of any failure.
  void wait_for_stop();

  // Workers: tells the scheduler this worker is done (bounded by
  // shutdown_timeout_s), then stops heartbeats. Servers: stops heartbeats.
  // Idempotent; errors while saying goodbye are not thrown (the job is over).
  void shutdown();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace dt::ps
