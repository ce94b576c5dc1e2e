// One rank of a collective among the worker processes of a job, in host
// memory: the CPU counterpart of collective::nccl::Communicator, what the
// "allreduce" kvstore runs on (no parameter servers in the data path).
//
// Links: every pair of ranks shares one nng byte stream (nng_stream_*, not
// message sockets: sends and receives go straight from and into the caller's
// buffers, with no per-message copy or allocation). Ranks on the same host
// use ipc:// (Unix sockets, several times TCP loopback's bandwidth), other
// pairs tcp://. The ranks meet through `exchange`, an all-gather of a small
// blob (ps::ClusterMember::allgather in a job; a plain function in tests):
// each rank publishes where it listens, then the lower rank of each pair
// dials the higher one.
//
// All-reduce (sum), chosen by size:
//  - up to small_bytes: recursive doubling (log2 n steps, whole message per
//    step; the extra ranks of a non-power-of-two n fold in first and get the
//    result last), the latency-optimal shape;
//  - above: ring reduce-scatter then all-gather, each rank's segment cut in
//    chunk_bytes pieces that are sent while the previous piece is added, so
//    each link carries 2 (n - 1) / n of the data (the bandwidth-optimal shape);
//    the ring visits each host's ranks one after another (host_groups.h's
//    ring_order), so it crosses between hosts once per host;
//  - above, when the ranks sit on several hosts with the same number (>= 2)
//    on each (host_groups.h) and `hierarchical` is on: a ring reduce-scatter
//    within each host, rings between hosts (one per local position, side by
//    side), a ring all-gather within each host (hierarchical_allreduce.h),
//    which puts 1/L of the flat ring's bytes or less on each host's link.
// float16 / bfloat16 arrays are summed in float32 (converted in and out), so
// no partial sum is rounded to 16 bits. Results are bit-identical on every
// rank (each element's final sum is computed once, by one rank, in a fixed
// order, then copied) and from run to run.
//
// Failure: every wait is bounded by timeout_s (Error(kTimedOut) naming the
// operation and the peer it waited for); a peer whose stream closes or
// breaks gives Error(kPeerLost) naming its rank. abort() from any thread
// fails the collective in progress the same way, at once; after any failure
// the communicator is unusable (every later call throws kBadState).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "collective/exchange.h"
#include "collective/host/link_watch.h"
#include "core/dtype.h"
#include "core/traffic.h"
#include "net/transport_security.h"

namespace dt::collective::host {

using collective::Exchange;

struct HostCommunicatorOptions {
  // Every wait: connecting, each send and receive of a collective.
  double timeout_s = 120;
  // All-reduces of at most this many bytes use recursive doubling.
  size_t small_bytes = 64 * 1024;
  // The ring's pipelining unit.
  size_t chunk_bytes = 1 << 20;
  // The address this rank's TCP listener binds and publishes (port chosen by
  // the system); peers on another host dial it.
  std::string host = "127.0.0.1";
  // Where ipc:// socket files go (one per rank, removed when the
  // communicator closes); empty: $TMPDIR, else /tmp.
  std::string ipc_dir;
  // Same-host peers use ipc:// unless this is false (tests force tcp).
  bool use_ipc = true;
  // Large all-reduces go hierarchical where the ranks' places allow it
  // (above) and every rank has this on; false on any rank: the flat ring
  // for all. DT_HIERARCHICAL_ALLREDUCE in a job.
  bool hierarchical = true;
  // Where this rank runs, as the hierarchy groups ranks into hosts; every
  // rank of one communicator must leave it empty or set it. Empty: this
  // machine and network namespace (mesh_rendezvous.h's
  // place_of_this_process). Tests give thread ranks "hosts" of their own.
  // One line (no '\n').
  std::string place;
  // The job's secret: each new stream proves both ends hold it before any
  // data (mesh_rendezvous.h).
  net::TransportSecurity security;
  // The stall inspector's note (link_watch.h): every communicator made
  // with these options writes the call it runs and the receive it waits on
  // there, and the rendezvous while it meets its peers. Null: none.
  std::shared_ptr<LinkWatch> link_watch;
};

class HostCommunicator {
 public:
  // Rank `rank` of `size`: listens, exchanges addresses through `exchange`,
  // connects to every other rank. Error(kInvalidArgument) for a bad rank or
  // size, kTimedOut when peers do not connect within timeout_s, kProtocol
  // when a peer's published address is malformed.
  static std::unique_ptr<HostCommunicator> create(int rank, int size, const Exchange& exchange,
                                                  const HostCommunicatorOptions& options = {});

  virtual ~HostCommunicator() = default;
  HostCommunicator(const HostCommunicator&) = delete;
  HostCommunicator& operator=(const HostCommunicator&) = delete;

  virtual int rank() const = 0;
  virtual int size() const = 0;

  // data = the sum over ranks of data, in place, `count` elements of dtype:
  // float32, float16, bfloat16 (summed in float32), int32, int64.
  // Error(kNotSupported) for other dtypes. Every rank must call it with the
  // same count, dtype and tag (any difference is Error(kProtocol) naming the
  // peer, where it can be seen); the tag says what the call is about.
  virtual void all_reduce_sum(void* data, size_t count, core::DType dtype, uint64_t tag = 0) = 0;
  // data on every rank = data on rank root (bytes bytes).
  virtual void broadcast(void* data, size_t bytes, int root) = 0;
  // Returns once every rank entered it.
  virtual void barrier() = 0;

  // Bytes this rank has sent to and received from its peers (headers
  // included), since it was created. Any thread.
  virtual core::Traffic traffic() const = 0;
  // The part of traffic() exchanged with ranks at other places (hosts).
  virtual core::Traffic traffic_between_hosts() const = 0;
  // Whether large all-reduces take the hierarchical shape (above).
  virtual bool hierarchical() const = 0;

  // From any thread: fails the collective in progress at once with
  // Error(kPeerLost, why) and closes every link (peers see this rank lost);
  // every later call throws kBadState. Idempotent.
  //
  // The collectives themselves are called by one thread at a time, every rank
  // making the same calls in the same order.
  virtual void abort(const std::string& why) = 0;

 protected:
  HostCommunicator() = default;
};

}  // namespace dt::collective::host
