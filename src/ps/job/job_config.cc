#include "ps/job/job_config.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "core/error.h"
#include "core/log.h"
#include "core/parameter_table.h"
#include "net/tls_config.h"
#include "ops/cpu/reduction_pool.h"
#include "ps/job/environment_options.h"
#include "ps/job/launcher_environment.h"
#include "ps/job/security_environment.h"
#include "ps/job/tls_environment.h"

namespace dt::ps {

using core::Error;
using core::ErrorCode;

const char* role_name(Role role) {
  switch (role) {
    case Role::kWorker:
      return "worker";
    case Role::kServer:
      return "server";
    case Role::kScheduler:
      return "scheduler";
  }
  return "unknown role";
}

void PsOptions::validate() const {
  const auto positive = [](double v, const char* name) {
    if (!(std::isfinite(v) && v > 0)) {
      throw Error(ErrorCode::kInvalidArgument, std::string(name) + " must be a positive number of seconds, got " + std::to_string(v));
    }
  };
  positive(startup_timeout_s, "startup_timeout_s");
  positive(request_timeout_s, "request_timeout_s");
  positive(heartbeat_interval_s, "heartbeat_interval_s");
  positive(heartbeat_timeout_s, "heartbeat_timeout_s");
  positive(shutdown_timeout_s, "shutdown_timeout_s");
  if (heartbeat_timeout_s <= heartbeat_interval_s) {
    throw Error(ErrorCode::kInvalidArgument, "heartbeat_timeout_s (" + seconds_text(heartbeat_timeout_s) +
                                                 ") must exceed heartbeat_interval_s (" +
                                                 seconds_text(heartbeat_interval_s) + ")");
  }
  if (bigarray_bound_bytes == 0) throw Error(ErrorCode::kInvalidArgument, "bigarray_bound_bytes must be positive");
  if (reduction_threads < 1 || reduction_threads > ops::cpu::ReductionPool::kMaxThreads) {
    throw Error(ErrorCode::kInvalidArgument, "reduction_threads must be 1 to " +
                                                 std::to_string(ops::cpu::ReductionPool::kMaxThreads) + ", got " +
                                                 std::to_string(reduction_threads));
  }
  if (max_message_bytes < 4096) throw Error(ErrorCode::kInvalidArgument, "max_message_bytes must be at least 4096");
}

std::chrono::milliseconds to_ms(double seconds) {
  const double ms = std::ceil(seconds * 1000.0);
  // Days are plenty; the cap keeps the conversion defined for huge inputs.
  return std::chrono::milliseconds(static_cast<int64_t>(std::min(std::max(ms, 1.0), 1e10)));
}

std::string seconds_text(double seconds) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.1f s", seconds);
  return buf;
}

namespace {

std::optional<std::string> non_empty(const EnvLookup& env, const char* name) {
  std::optional<std::string> v = env(name);
  if (v && v->empty()) return std::nullopt;
  return v;
}

long parse_int(const std::string& text, const char* name, long min, long max) {
  errno = 0;
  char* end = nullptr;
  const long v = std::strtol(text.c_str(), &end, 10);
  if (errno != 0 || end == text.c_str() || *end != '\0' || v < min || v > max) {
    throw Error(ErrorCode::kInvalidArgument, std::string(name) + "=\"" + text + "\" is not an integer in [" +
                                                 std::to_string(min) + ", " + std::to_string(max) + "]");
  }
  return v;
}

struct AddrinfoDeleter {
  void operator()(addrinfo* a) const { freeaddrinfo(a); }
};
struct IfaddrsDeleter {
  void operator()(ifaddrs* a) const { freeifaddrs(a); }
};

// IPv4 text of host (an address or a name), for nng's tcp:// URL.
std::string resolve_ipv4(const std::string& host, const char* name) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* raw = nullptr;
  const int rv = getaddrinfo(host.c_str(), nullptr, &hints, &raw);
  std::unique_ptr<addrinfo, AddrinfoDeleter> result(raw);
  if (rv != 0 || raw == nullptr) {
    throw Error(ErrorCode::kInvalidArgument,
                std::string(name) + "=\"" + host + "\" does not resolve to an IPv4 address: " + gai_strerror(rv));
  }
  char text[INET_ADDRSTRLEN];
  inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(raw->ai_addr)->sin_addr, text, sizeof text);
  return text;
}

// The IPv4 address of interface `wanted`, or of the first non-loopback
// interface that is up when wanted is empty; nullopt when there is none.
std::optional<std::string> interface_ipv4(const std::string& wanted) {
  ifaddrs* raw = nullptr;
  if (getifaddrs(&raw) != 0) return std::nullopt;
  std::unique_ptr<ifaddrs, IfaddrsDeleter> list(raw);
  for (ifaddrs* a = raw; a != nullptr; a = a->ifa_next) {
    if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET) continue;
    if (wanted.empty()) {
      if ((a->ifa_flags & IFF_LOOPBACK) || !(a->ifa_flags & IFF_UP)) continue;
    } else if (wanted != a->ifa_name) {
      continue;
    }
    char text[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr, text, sizeof text);
    return std::string(text);
  }
  return std::nullopt;
}

// Whether ip is an address of this host (all of 127.0.0.0/8 is).
bool is_local_ipv4(const std::string& ip) {
  if (ip.rfind("127.", 0) == 0) return true;
  ifaddrs* raw = nullptr;
  if (getifaddrs(&raw) != 0) return false;
  std::unique_ptr<ifaddrs, IfaddrsDeleter> list(raw);
  for (ifaddrs* a = raw; a != nullptr; a = a->ifa_next) {
    if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET) continue;
    char text[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr, text, sizeof text);
    if (ip == text) return true;
  }
  return false;
}

}  // namespace

Role role_from(const EnvLookup& env) { return resolve_launcher_layout(env).role; }

JobConfig job_config_from(const EnvLookup& env, const JobOverrides& overrides) {
  const LauncherLayout layout = resolve_launcher_layout(env, overrides);
  JobConfig job;
  job.role = layout.role;
  job.layout_summary = layout.summary();
  const auto count = [](const std::optional<Sourced<int>>& v, const char* name, int min) {
    if (!v) throw Error(ErrorCode::kInvalidArgument, std::string(name) + " is not set");
    if (v->value < min || v->value > 65535) {
      throw Error(ErrorCode::kInvalidArgument, v->variable + " gives " + std::to_string(v->value) + " " + name +
                                                   ", not in [" + std::to_string(min) + ", 65535]");
    }
    return v->value;
  };
  // No servers is a job of the all-reduce stores (allreduce, dist_nccl):
  // a scheduler and workers only.
  job.num_servers = count(layout.num_servers, "DMLC_NUM_SERVER", 0);
  job.num_workers = count(layout.num_workers, "DMLC_NUM_WORKER", 1);
  if (job.role == Role::kServer && job.num_servers == 0) {
    throw Error(ErrorCode::kInvalidArgument, "this node's role is server, but the job has DMLC_NUM_SERVER=0 (" +
                                                 job.layout_summary + ")");
  }
  if (job.role == Role::kWorker && layout.worker_id) {
    if (layout.worker_id->value < 0 || layout.worker_id->value >= job.num_workers) {
      throw Error(ErrorCode::kInvalidArgument, layout.worker_id->variable + " gives worker id " +
                                                   std::to_string(layout.worker_id->value) + ", not in [0, " +
                                                   std::to_string(job.num_workers - 1) + "]");
    }
    job.worker_id = layout.worker_id->value;
  }
  std::string root_ip;
  int root_port = -1;
  if (auto url = non_empty(env, "DT_PS_ROOT_URL")) {
    job.root_url = *url;
    job.scheduler_listen_url = *url;
  } else {
    if (!layout.root_port) {
      throw Error(ErrorCode::kInvalidArgument,
                  "DMLC_PS_ROOT_PORT is not set (nor MX_CONFIG's scheduler port or MASTER_PORT)");
    }
    if (!layout.root_uri) {
      throw Error(ErrorCode::kInvalidArgument,
                  "DMLC_PS_ROOT_URI is not set (nor MX_CONFIG's scheduler url, MASTER_ADDR or SLURM_JOB_NODELIST)");
    }
    // Port 0 lets the scheduler pick one (reported through DT_PS_PORT_FILE);
    // other nodes need the real one.
    const long port = parse_int(layout.root_port->value, layout.root_port->variable.c_str(),
                                job.role == Role::kScheduler ? 0 : 1, 65535);
    root_ip = resolve_ipv4(layout.root_uri->value, layout.root_uri->variable.c_str());
    root_port = static_cast<int>(port);
    job.root_url = "tcp://" + root_ip + ":" + std::to_string(port);
  }
  if (auto host = non_empty(env, "DMLC_NODE_HOST")) {
    job.node_host = *host;
  } else if (auto iface = non_empty(env, "DMLC_INTERFACE")) {
    std::optional<std::string> ip = interface_ipv4(*iface);
    if (!ip) throw Error(ErrorCode::kInvalidArgument, "DMLC_INTERFACE=\"" + *iface + "\" has no IPv4 address on this host");
    job.node_host = *ip;
  } else if (root_ip.empty() || root_ip.rfind("127.", 0) == 0) {
    job.node_host = "127.0.0.1";
  } else {
    job.node_host = interface_ipv4("").value_or("127.0.0.1");
  }
  if (root_port >= 0) {
    // Listen where told: the scheduler's own address when DMLC_PS_ROOT_URI
    // names this host (a service address that routes here, as Kubernetes
    // gives, is not one: then this node's address), every interface only
    // when DT_PS_LISTEN_ALL=1 asks for it.
    const auto all = non_empty(env, "DT_PS_LISTEN_ALL");
    bool listen_all = all && *all != "0";
    // A host name that resolves to loopback here (Debian's 127.0.1.1 line
    // in /etc/hosts) is this host's name, which other hosts resolve to a
    // routable address: one port must then serve both.
    const std::string& uri = layout.root_uri->value;
    in_addr literal{};
    if (!listen_all && root_ip.rfind("127.", 0) == 0 && uri != "localhost" &&
        inet_pton(AF_INET, uri.c_str(), &literal) != 1) {
      listen_all = true;
      job.layout_summary += "; the scheduler listens on every interface: " + layout.root_uri->variable + "=" + uri +
                            " resolves to " + root_ip + " here (give an address to listen on it alone)";
    }
    const std::string host = listen_all ? "0.0.0.0" : is_local_ipv4(root_ip) ? root_ip : job.node_host;
    job.scheduler_listen_url = "tcp://" + host + ":" + std::to_string(root_port);
  }
  if (auto file = non_empty(env, "DT_PS_PORT_FILE")) job.port_file = *file;
  job.security = security_from(env);
  if (overrides.tls) {
    check_tls_files(*overrides.tls,
                    net::TlsFileNames{"options->tls_cert_file", "options->tls_key_file", "options->tls_ca_file"});
    job.security.tls = *overrides.tls;
  }
  // A TLS job's tcp connections are all tls+tcp (net/tls_config.h).
  job.root_url = net::url_for_transport(job.root_url, job.security.tls);
  job.scheduler_listen_url = net::url_for_transport(job.scheduler_listen_url, job.security.tls);
  return job;
}

namespace {
std::optional<std::string> getenv_lookup(const char* name) {
  const char* v = core::read_parameter(name);
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}
}  // namespace

Role role_from_env() { return role_from(getenv_lookup); }

JobConfig job_config_from_env(const JobOverrides& overrides) {
  JobConfig job = job_config_from(getenv_lookup, overrides);
  // Once per process: a program may create several kvstores.
  static std::atomic<bool> logged{false};
  if (!logged.exchange(true)) {
    core::log(core::LogLevel::kInfo, "", job.layout_summary);
    if (!job.security.secret) {
      core::log(core::LogLevel::kWarning, "",
                "no job secret (DT_JOB_SECRET or DT_JOB_SECRET_FILE): any process that reaches this job's ports "
                "can join it (docs/security.md)");
    }
  }
  log_mxnet_knob_notes_once();
  return job;
}

}  // namespace dt::ps
