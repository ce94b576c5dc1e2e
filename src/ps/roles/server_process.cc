#include "ps/roles/server_process.h"

#include <malloc.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"
#include "ps/roles/cluster_member.h"
#include "ps/roles/server_request_handler.h"
#include "ps/transport/request_server.h"

namespace dt::ps {

namespace {

// A name no other listener in this process or host uses.
std::string unique_suffix(const void* owner) {
  const auto ticks = std::chrono::steady_clock::now().time_since_epoch().count();
  return std::to_string(::getpid()) + "-" + std::to_string(reinterpret_cast<uintptr_t>(owner)) + "-" +
         std::to_string(ticks);
}

std::vector<std::string> listen_urls(const JobConfig& job, const void* owner) {
  if (job.root_url.rfind("inproc://", 0) == 0) return {"inproc://dt-ps-server-" + unique_suffix(owner)};
  return {"tcp://" + job.node_host + ":0", "ipc:///tmp/dt-ps-" + unique_suffix(owner) + ".ipc"};
}

}  // namespace

void run_server(const JobConfig& job, const PsOptions& options) {
  options.validate();
  // Received messages are fresh allocations; keep glibc from mapping and
  // unmapping them (and trimming the heap) each time: page faults dominate
  // large transfers otherwise (TRANSPORT-FACTS). Before any thread starts.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  ServerRequestHandler server(job.num_workers);
  RequestServer transport(
      listen_urls(job, &server), server_concurrency(job.num_workers),
      [&server](Message request, RequestServer::Reply reply) { server.handle(std::move(request), reply); },
      options.max_message_bytes);
  ClusterMember member(job, options, transport.bound_urls());
  member.on_lost([&server](const LostNode& lost) { server.fail(core::Error(core::ErrorCode::kPeerLost, lost.message())); });
  member.wait_for_stop();
  member.shutdown();
}

}  // namespace dt::ps
