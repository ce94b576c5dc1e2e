#include "ps/server/server_process.h"

#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/log.h"
#include "core/parameter_table.h"
#include "core/status_file.h"
#include "net/tls_config.h"
#include "core/stall_watch.h"
#include "ps/roles/cluster_member.h"
#include "ps/server/part_filler.h"
#include "ps/server/quick_requests.h"
#include "ps/server/request_handler.h"
#include "ps/server/server_status_file.h"
#include "ps/server/work_clock.h"
#include "ps/transport/request_server.h"

namespace dt::ps {

namespace {

// A name no other listener in this process or host uses.
std::string unique_suffix(const void* owner) {
  const auto ticks = std::chrono::steady_clock::now().time_since_epoch().count();
  return std::to_string(::getpid()) + "-" + std::to_string(reinterpret_cast<uintptr_t>(owner)) + "-" +
         std::to_string(ticks);
}

constexpr const char* kIpcDirectory = "/tmp";
constexpr const char* kIpcPrefix = "dt-ps-";

// Where this server's ipc listener lives; "" for an in-process job.
std::string ipc_path(const JobConfig& job, const void* owner) {
  if (job.root_url.rfind("inproc://", 0) == 0) return {};
  return std::string(kIpcDirectory) + "/" + kIpcPrefix + unique_suffix(owner) + ".ipc";
}

std::vector<std::string> listen_urls(const JobConfig& job, const void* owner, const std::string& ipc) {
  if (ipc.empty()) return {"inproc://dt-ps-server-" + unique_suffix(owner)};
  return {net::url_for_transport("tcp://" + job.node_host + ":0", job.security.tls), "ipc://" + ipc};
}

// A killed server cannot remove its socket file: the next server on the
// host removes those whose process (the pid in the name) is gone.
void remove_stale_ipc_files() {
  DIR* dir = ::opendir(kIpcDirectory);
  if (dir == nullptr) return;
  const size_t prefix = std::strlen(kIpcPrefix);
  while (const dirent* entry = ::readdir(dir)) {
    const std::string name = entry->d_name;
    if (name.compare(0, prefix, kIpcPrefix) != 0 || name.size() < 4 || name.compare(name.size() - 4, 4, ".ipc") != 0) {
      continue;
    }
    char* end = nullptr;
    const long pid = std::strtol(name.c_str() + prefix, &end, 10);
    if (pid <= 0 || end == nullptr || *end != '-') continue;
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
    ::unlink((std::string(kIpcDirectory) + "/" + name).c_str());
  }
  ::closedir(dir);
}

// Removes the socket file when the server ends, whichever way.
class IpcFileRemover {
 public:
  explicit IpcFileRemover(std::string path) : path_(std::move(path)) {}
  ~IpcFileRemover() {
    if (!path_.empty()) ::unlink(path_.c_str());
  }
  IpcFileRemover(const IpcFileRemover&) = delete;
  IpcFileRemover& operator=(const IpcFileRemover&) = delete;

 private:
  std::string path_;
};

// DT_PS_SERVER_MEMORY_LIMIT: bytes, or with a K, M or G suffix (binary).
uint64_t memory_limit_from_env() {
  const char* text = core::read_parameter("DT_PS_SERVER_MEMORY_LIMIT");
  if (text == nullptr || *text == '\0') return 0;
  char* end = nullptr;
  const unsigned long long value = std::strtoull(text, &end, 10);
  int shift = 0;
  if (end != nullptr && *end != '\0') {
    const char unit = static_cast<char>(std::toupper(static_cast<unsigned char>(*end)));
    shift = unit == 'K' ? 10 : unit == 'M' ? 20 : unit == 'G' ? 30 : -1;
    if (shift < 0 || end[1] != '\0') shift = -1;
  }
  if (end == text || shift < 0 || value == 0 || value > (~0ull >> shift)) {
    throw core::Error(core::ErrorCode::kInvalidArgument,
                      std::string("DT_PS_SERVER_MEMORY_LIMIT=\"") + text +
                          "\" is not a positive byte count (e.g. 8G, 512M, 1000000)");
  }
  return static_cast<uint64_t>(value) << shift;
}

}  // namespace

void run_server(const JobConfig& job, const PsOptions& options) {
  options.validate();
  // dtrun's live job summary (DT_STATUS_FILE, or relayed through the
  // scheduler): where this server's time goes, counted by a clock the
  // handler and the parts' rounds see only when the summary is on (null:
  // off). Before the server, whose store keeps the clock.
  std::unique_ptr<core::StatusFile> status_file = core::StatusFile::from_environment("server");
  const bool status_relayed = !status_file && core::StatusFile::relayed_from_environment();
  std::unique_ptr<WorkClock> work_clock = status_file || status_relayed ? std::make_unique<WorkClock>() : nullptr;
  ServerRequestHandler server(job.num_workers, memory_limit_from_env(), options.reduction());
  server.store().set_work_clock(work_clock.get());
  const std::string ipc = ipc_path(job, &server);
  if (!ipc.empty()) remove_stale_ipc_files();
  IpcFileRemover remove_ipc_file(ipc);
  ConnectionPolicy policy;
  policy.per_connection = kRequestsPerWorker;
  // Held pulls and pushes end with the workers' own deadline; the
  // transport's answers whatever is still held a little after it.
  policy.reply_deadline_s = options.request_timeout_s + options.heartbeat_timeout_s;
  RequestServer transport(
      listen_urls(job, &server, ipc), server_receivers(job.num_workers),
      [&server, clock = work_clock.get()](Message request, RequestServer::Reply reply) {
        const WorkClock::Section handling(clock, WorkClock::Activity::kHandling);
        server.handle(std::move(request), reply);
      },
      options.max_message_bytes, [&server](uint32_t pipe) { server.connection_closed(pipe); }, policy,
      job.security, is_quick_request);
  // After the transport: its last write, whichever way the server ends,
  // still reads the transport's bytes.
  std::optional<ServerStatusFile> status;
  if (status_file) status.emplace(std::move(status_file), *work_clock, [&transport] { return transport.traffic(); });
  // New copies of parts after a server loss (DT_SERVER_REPLICATION=1) are
  // filled from the servers that hold them. Declared before the member,
  // whose heartbeat thread tells it of lost servers until the member ends.
  PartFiller filler(server.store(), job.node_host, options, job.security);
  filler.on_source_numbers([&server](double learning_rate, double rescale_grad) {
    server.take_source_optimizer_numbers(learning_rate, rescale_grad);
  });
  // A server started again that rejoins a replicated job (its place was a
  // lost server's) takes the job's settings from another server before it
  // beats, since the scheduler announces it to the workers at its first
  // heartbeat; within half the heartbeat timeout per server asked, so the
  // scheduler does not take the wait for a loss.
  const auto settings_first = [&](const NodeTable& table) {
    if (!table.joined_running_job) return;
    server.apply_settings(filler.job_settings(table, to_ms(options.heartbeat_timeout_s / 2)));
    core::logf(core::LogLevel::kInfo, "server " + std::to_string(table.your_rank),
               "rejoined the running job (pid %lld) with the job's settings; it takes new copies of the key parts "
               "left with one holder as the workers push them",
               static_cast<long long>(::getpid()));
  };
  ClusterMember member(job, options, transport.bound_urls(), settings_first);
  filler.set_servers(member.rank(), member.table().servers);
  if (status_relayed) {
    member.report_status_from([&transport, clock = work_clock.get()] { return server_status(*clock, transport.traffic()); });
  }
  member.on_lost([&server](const LostNode& lost) { server.fail(core::Error(core::ErrorCode::kPeerLost, lost.message())); });
  // DT_WORKER_LOSS=continue: rounds stop waiting for a worker the job goes on without.
  member.on_departed([&server](const LostNode& gone) {
    if (gone.role == Role::kWorker) server.store().worker_departed(gone.rank, gone.pid);
  });
  // A departed server (DT_SERVER_REPLICATION=1) is the workers' business:
  // they move its parts to their other holders, and give those parts new
  // copies, which fail here if they were being filled from it. A server
  // that rejoined in its place is where later fills from that rank go.
  member.on_server_change([&filler](const ClusterMember::ServerNews& news) {
    if (news.change.rejoined) {
      filler.server_rejoined(news.rejoined);
    } else {
      filler.server_lost(news.lost.rank);
    }
  });
  // The stall inspector: rounds waiting past DT_STALL_WARNING_S are logged
  // here and named to the scheduler, which tells the waiting workers.
  core::StallWatch stall_watch(
      "server " + std::to_string(member.rank()), options.stall_warning_s,
      [&server] { return server.store().open_rounds(); },
      [&member](const std::vector<int>& workers) { member.report_stalled_on(workers); });
  stall_watch.start();
  member.wait_for_stop();
  member.shutdown();
  // How many requests took the latency path (quick_requests.h).
  const RequestServer::Handled handled = transport.handled();
  core::logf(core::LogLevel::kDebug, "server " + std::to_string(member.rank()),
             "requests handled where they were received: %llu, by the handler pool: %llu",
             static_cast<unsigned long long>(handled.on_receipt), static_cast<unsigned long long>(handled.by_pool));
}

}  // namespace dt::ps
