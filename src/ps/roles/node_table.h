// The job's membership as nodes see it: who serves and works, at which rank
// and address, and which nodes were lost. Plain C++ values; the wire form is
// in ps/transport/protocol.fbs and converted here.
#pragma once

#include <flatbuffers/flatbuffers.h>

#include <cstdint>
#include <string>
#include <vector>

#include "ps/job/job_config.h"
#include "ps/key_placement.h"
#include "ps/transport/protocol_generated.h"

namespace dt::ps {

struct NodeInfo {
  Role role = Role::kWorker;
  int rank = -1;
  std::string host;
  int64_t pid = 0;
  std::vector<std::string> data_urls;  // servers: where workers reach them
  // "worker 1 (pid 4242 on host 10.0.0.2)"
  std::string describe() const;
};

struct NodeTable {
  int num_servers = 0;
  int num_workers = 0;
  std::vector<NodeInfo> servers;  // index = rank
  std::vector<NodeInfo> workers;  // index = rank
  int your_rank = -1;
  int64_t scheduler_pid = 0;  // 0: unknown
  // This worker registered after the job started, in the place of one the
  // job went on without (DT_WORKER_LOSS=continue): it joins the servers'
  // rounds (DataOp Join) instead of starting them.
  bool joined_running_job = false;
  uint64_t first_barrier = 0;  // the id of the first barrier it takes part in
  // The scheduler's clock as it sent the table (0: an older scheduler) and
  // its host's boot id ("": unknown), for the node's timeline.
  int64_t scheduler_clock_us = 0;
  std::string scheduler_boot_id;
};

struct LostNode {
  Role role = Role::kWorker;
  int rank = -1;
  std::string host;
  int64_t pid = 0;
  std::string reason;  // "no heartbeat for 5.0 s", "connection closed"
  // "worker 1 (pid 4242 on host x) lost: connection closed"
  std::string message() const;
};

// DT_SERVER_REPLICATION=1: a server started again that took the place of a
// departed one, after how many server departures (HeartbeatReply.rejoined).
struct RejoinedServer {
  NodeInfo node;
  uint32_t after_departures = 0;
};

// The job's server changes in the order they happened: the departed
// servers (in departed's order; departed workers are skipped) with each
// rejoin placed after the departures it followed. Every node and the
// scheduler derive the parts' holders from this (ps::part_holders).
std::vector<ServerChange> server_changes(const std::vector<LostNode>& departed,
                                         const std::vector<RejoinedServer>& rejoined);

wire::Role to_wire(Role role);
// Error(kProtocol) for a value outside the enum.
Role from_wire(wire::Role role);

flatbuffers::Offset<wire::NodeInfo> write_node_info(flatbuffers::FlatBufferBuilder& fbb, const NodeInfo& node);
flatbuffers::Offset<wire::NodeTable> write_node_table(flatbuffers::FlatBufferBuilder& fbb, const NodeTable& table);
flatbuffers::Offset<wire::LostNode> write_lost_node(flatbuffers::FlatBufferBuilder& fbb, const LostNode& lost);
flatbuffers::Offset<wire::RejoinedServer> write_rejoined_server(flatbuffers::FlatBufferBuilder& fbb,
                                                                const RejoinedServer& rejoined);

// One line per node ("server 0 (pid 42 on host h) at tcp://h:9000"), for
// PS_VERBOSE.
std::vector<std::string> node_table_lines(const NodeTable& table);

// From verified buffers; Error(kProtocol) for contents that contradict
// themselves (ranks out of order, counts that do not match the lists).
NodeInfo read_node_info(const wire::NodeInfo& node);
NodeTable read_node_table(const wire::NodeTable& table);
LostNode read_lost_node(const wire::LostNode& lost);
// Error(kProtocol) without its node or for a node that is not a server.
RejoinedServer read_rejoined_server(const wire::RejoinedServer& rejoined);

}  // namespace dt::ps
