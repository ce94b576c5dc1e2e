// How the ranks of a host communicator connect: each rank listens (tcp:// on
// options.host, port chosen by the system; ipc:// in options.ipc_dir too),
// publishes its addresses and host identity through the exchange, then the
// lower rank of every pair dials the higher one, over ipc:// when both
// published the same host identity and an ipc address, tcp:// otherwise. A
// short hello on each new stream says who dialled, so the accepting side
// needs no particular arrival order. Each rank also publishes its place
// (where it runs), which the communicator groups into hosts, and whether it
// wants the hierarchical all-reduce.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "collective/host/host_communicator.h"
#include "collective/host/peer_stream.h"

namespace dt::collective::host {

// Identifies the machine and filesystem view this process runs in: host name,
// boot id (/proc/sys/kernel/random/boot_id) and mount namespace, so that two
// processes with the same identity can reach each other's Unix sockets.
std::string host_identity();

// Where this process runs, as the hierarchical all-reduce groups ranks into
// hosts: host_identity() and the network namespace (processes in one
// namespace reach each other over its loopback, at memory speed; another
// namespace is as far as another machine's).
std::string place_of_this_process();

struct Mesh {
  // One stream per other rank, indexed by rank (nullptr at `rank`).
  std::vector<std::unique_ptr<PeerStream>> streams;
  // Every rank's place (options.place, else place_of_this_process()).
  std::vector<std::string> places;
  // Whether every rank's options.hierarchical is on: one rank's "off" keeps
  // the whole communicator flat, so ranks never disagree on the shape.
  bool hierarchical = false;
};

// Listeners and ipc socket files are gone when it returns. Errors: see
// HostCommunicator::create (kTimedOut, kProtocol), kNetwork when listening
// or dialling fails.
Mesh connect_mesh(int rank, int size, const Exchange& exchange, const HostCommunicatorOptions& options);

}  // namespace dt::collective::host
