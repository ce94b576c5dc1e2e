#include "ps/roles/node_table.h"

#include "core/error.h"

namespace dt::ps {

using core::Error;
using core::ErrorCode;

namespace {

std::string describe(Role role, int rank, int64_t pid, const std::string& host) {
  return std::string(role_name(role)) + (role == Role::kScheduler ? "" : " " + std::to_string(rank)) + " (pid " +
         (pid > 0 ? std::to_string(pid) : std::string("?")) + " on host " + (host.empty() ? "?" : host) + ")";
}

std::string str(const flatbuffers::String* s) { return s == nullptr ? std::string() : s->str(); }

}  // namespace

std::string NodeInfo::describe() const { return ps::describe(role, rank, pid, host); }

std::vector<std::string> node_table_lines(const NodeTable& table) {
  std::vector<std::string> lines;
  for (const std::vector<NodeInfo>* nodes : {&table.servers, &table.workers}) {
    for (const NodeInfo& node : *nodes) {
      std::string line = node.describe();
      for (size_t i = 0; i < node.data_urls.size(); ++i) line += (i == 0 ? " at " : ", ") + node.data_urls[i];
      lines.push_back(line);
    }
  }
  return lines;
}

std::string LostNode::message() const { return ps::describe(role, rank, pid, host) + " lost: " + reason; }

wire::Role to_wire(Role role) { return static_cast<wire::Role>(static_cast<int>(role)); }

Role from_wire(wire::Role role) {
  const int v = static_cast<int>(role);
  if (v < 0 || v > 2) throw Error(ErrorCode::kProtocol, "unknown role " + std::to_string(v));
  return static_cast<Role>(v);
}

flatbuffers::Offset<wire::NodeInfo> write_node_info(flatbuffers::FlatBufferBuilder& fbb, const NodeInfo& node) {
  auto host = fbb.CreateString(node.host);
  auto urls = fbb.CreateVectorOfStrings(node.data_urls);
  return wire::CreateNodeInfo(fbb, to_wire(node.role), node.rank, host, node.pid, urls);
}

flatbuffers::Offset<wire::NodeTable> write_node_table(flatbuffers::FlatBufferBuilder& fbb, const NodeTable& table) {
  std::vector<flatbuffers::Offset<wire::NodeInfo>> servers, workers;
  for (const NodeInfo& n : table.servers) servers.push_back(write_node_info(fbb, n));
  for (const NodeInfo& n : table.workers) workers.push_back(write_node_info(fbb, n));
  auto server_list = fbb.CreateVector(servers);
  auto worker_list = fbb.CreateVector(workers);
  flatbuffers::Offset<flatbuffers::String> boot_id;
  if (!table.scheduler_boot_id.empty()) boot_id = fbb.CreateString(table.scheduler_boot_id);
  return wire::CreateNodeTable(fbb, table.num_servers, table.num_workers, server_list, worker_list, table.your_rank,
                               table.scheduler_pid, table.joined_running_job, table.first_barrier,
                               table.scheduler_clock_us, boot_id);
}

flatbuffers::Offset<wire::LostNode> write_lost_node(flatbuffers::FlatBufferBuilder& fbb, const LostNode& lost) {
  auto host = fbb.CreateString(lost.host);
  auto reason = fbb.CreateString(lost.reason);
  return wire::CreateLostNode(fbb, to_wire(lost.role), lost.rank, host, lost.pid, reason);
}

flatbuffers::Offset<wire::RejoinedServer> write_rejoined_server(flatbuffers::FlatBufferBuilder& fbb,
                                                                const RejoinedServer& rejoined) {
  auto node = write_node_info(fbb, rejoined.node);
  return wire::CreateRejoinedServer(fbb, node, rejoined.after_departures);
}

std::vector<ServerChange> server_changes(const std::vector<LostNode>& departed,
                                         const std::vector<RejoinedServer>& rejoined) {
  std::vector<ServerChange> changes;
  uint32_t departures = 0;
  size_t next_rejoin = 0;
  const auto rejoins_up_to = [&](uint32_t count) {
    for (; next_rejoin < rejoined.size() && rejoined[next_rejoin].after_departures <= count; ++next_rejoin) {
      changes.push_back(ServerChange{rejoined[next_rejoin].node.rank, true});
    }
  };
  for (const LostNode& gone : departed) {
    if (gone.role != Role::kServer) continue;
    rejoins_up_to(departures);
    changes.push_back(ServerChange{gone.rank, false});
    ++departures;
  }
  rejoins_up_to(~uint32_t{0});
  return changes;
}

NodeInfo read_node_info(const wire::NodeInfo& node) {
  NodeInfo out;
  out.role = from_wire(node.role());
  out.rank = node.rank();
  out.host = str(node.host());
  out.pid = node.pid();
  if (node.data_urls() != nullptr) {
    for (const auto* url : *node.data_urls()) out.data_urls.push_back(str(url));
  }
  return out;
}

NodeTable read_node_table(const wire::NodeTable& table) {
  NodeTable out;
  out.num_servers = table.num_servers();
  out.num_workers = table.num_workers();
  out.your_rank = table.your_rank();
  out.scheduler_pid = table.scheduler_pid();
  out.joined_running_job = table.joined_running_job();
  out.first_barrier = table.first_barrier();
  out.scheduler_clock_us = table.scheduler_clock_us();
  if (table.scheduler_boot_id() != nullptr) out.scheduler_boot_id = table.scheduler_boot_id()->str();
  const auto read_list = [](const flatbuffers::Vector<flatbuffers::Offset<wire::NodeInfo>>* list, Role role,
                            int count, std::vector<NodeInfo>& into) {
    const int size = list == nullptr ? 0 : static_cast<int>(list->size());
    if (size != count) {
      throw Error(ErrorCode::kProtocol, std::string("node table lists ") + std::to_string(size) + " " + role_name(role) +
                                            "s but counts " + std::to_string(count));
    }
    for (int i = 0; i < size; ++i) {
      NodeInfo node = read_node_info(*list->Get(static_cast<flatbuffers::uoffset_t>(i)));
      if (node.role != role || node.rank != i) {
        throw Error(ErrorCode::kProtocol, std::string("node table entry ") + std::to_string(i) + " of the " +
                                              role_name(role) + "s is " + node.describe());
      }
      into.push_back(std::move(node));
    }
  };
  read_list(table.servers(), Role::kServer, out.num_servers, out.servers);
  read_list(table.workers(), Role::kWorker, out.num_workers, out.workers);
  return out;
}

RejoinedServer read_rejoined_server(const wire::RejoinedServer& rejoined) {
  if (rejoined.node() == nullptr) throw Error(ErrorCode::kProtocol, "a rejoined server without its node");
  RejoinedServer out;
  out.node = read_node_info(*rejoined.node());
  out.after_departures = rejoined.after_departures();
  if (out.node.role != Role::kServer || out.node.rank < 0) {
    throw Error(ErrorCode::kProtocol, "a rejoined server that is " + out.node.describe());
  }
  return out;
}

LostNode read_lost_node(const wire::LostNode& lost) {
  LostNode out;
  out.role = from_wire(lost.role());
  out.rank = lost.rank();
  out.host = str(lost.host());
  out.pid = lost.pid();
  out.reason = str(lost.reason());
  return out;
}

}  // namespace dt::ps
