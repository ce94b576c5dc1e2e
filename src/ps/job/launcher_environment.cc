#include "ps/job/launcher_environment.h"

#include <cerrno>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "ps/job/hostlist.h"

namespace dt::ps {

using core::Error;
using core::ErrorCode;

const char* layout_source_name(LayoutSource source) {
  switch (source) {
    case LayoutSource::kExplicit:
      return "explicit options";
    case LayoutSource::kDmlc:
      return "DMLC_*";
    case LayoutSource::kMxConfig:
      return "MX_CONFIG";
    case LayoutSource::kTorch:
      return "RANK/WORLD_SIZE";
    case LayoutSource::kOpenMpi:
      return "OMPI_COMM_WORLD_*";
    case LayoutSource::kPmi:
      return "PMI_RANK/PMI_SIZE";
    case LayoutSource::kSlurm:
      return "SLURM_PROCID/SLURM_NTASKS";
  }
  return "unknown source";
}

namespace {

// Counts and ranks stay far below this; it only keeps arithmetic defined.
constexpr long kMaxCount = 1 << 20;

[[noreturn]] void invalid(const std::string& message) { throw Error(ErrorCode::kInvalidArgument, message); }

std::optional<std::string> non_empty(const EnvLookup& env, const char* name) {
  std::optional<std::string> v = env(name);
  if (v && v->empty()) return std::nullopt;
  return v;
}

int parse_int(const std::string& text, const std::string& name, long min, long max) {
  errno = 0;
  char* end = nullptr;
  const long v = std::strtol(text.c_str(), &end, 10);
  if (errno != 0 || end == text.c_str() || *end != '\0' || v < min || v > max) {
    invalid(name + "=\"" + text + "\" is not an integer in [" + std::to_string(min) + ", " + std::to_string(max) +
            "]");
  }
  return static_cast<int>(v);
}

std::optional<Sourced<int>> int_variable(const EnvLookup& env, const char* name, long min, long max) {
  if (auto text = non_empty(env, name)) return Sourced<int>{parse_int(*text, name, min, max), name};
  return std::nullopt;
}

std::optional<Sourced<std::string>> text_variable(const EnvLookup& env, const char* name) {
  if (auto text = non_empty(env, name)) return Sourced<std::string>{*text, name};
  return std::nullopt;
}

Role role_named(const std::string& name, const std::string& variable) {
  if (name == "worker") return Role::kWorker;
  if (name == "server") return Role::kServer;
  if (name == "scheduler") return Role::kScheduler;
  invalid(variable + "=\"" + name + "\" is not one of worker, server, scheduler");
}

// What MX_CONFIG says, checked against the operator's format.
struct MxConfig {
  Role role = Role::kWorker;
  int index = 0;
  int num_servers = 0;
  int num_workers = 0;
  std::string scheduler_url;
  int scheduler_port = 0;
};

MxConfig parse_mx_config(const std::string& text) {
  using nlohmann::json;
  const auto bad = [](const std::string& why) -> Error {
    return Error(ErrorCode::kInvalidArgument, "MX_CONFIG is not a Kubeflow MXJob configuration: " + why);
  };
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::exception& e) {
    throw bad(std::string("invalid JSON (") + e.what() + ")");
  }
  if (!doc.is_object()) throw bad("not a JSON object");
  const auto object_at = [&](const json& parent, const char* key, const std::string& path) -> const json& {
    auto it = parent.find(key);
    if (it == parent.end() || !it->is_object()) throw bad(path + " is missing or not an object");
    return *it;
  };
  const auto int_at = [&](const json& parent, const char* key, const std::string& path, long min, long max) {
    auto it = parent.find(key);
    if (it == parent.end() || !it->is_number_integer() || it->get<long>() < min || it->get<long>() > max) {
      throw bad(path + " is missing or not an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]");
    }
    return static_cast<int>(it->get<long>());
  };
  const json& task = object_at(doc, "task", "\"task\"");
  auto type = task.find("type");
  if (type == task.end() || !type->is_string()) throw bad("task.type is missing or not a string");
  MxConfig config;
  const std::string type_name = type->get<std::string>();
  if (type_name != "worker" && type_name != "server" && type_name != "scheduler") {
    throw bad("task.type \"" + type_name + "\" is not one of scheduler, server, worker");
  }
  config.role = role_named(type_name, "MX_CONFIG task.type");
  config.index = int_at(task, "index", "task.index", 0, kMaxCount);
  const json& cluster = object_at(doc, "cluster", "\"cluster\"");
  const auto count = [&](const char* role) {
    auto it = cluster.find(role);
    if (it == cluster.end()) return 0;
    if (!it->is_array()) throw bad(std::string("cluster.") + role + " is not an array");
    return static_cast<int>(it->size());
  };
  config.num_servers = count("server");
  config.num_workers = count("worker");
  auto scheduler = cluster.find("scheduler");
  if (scheduler == cluster.end() || !scheduler->is_array() || scheduler->size() != 1 ||
      !(*scheduler)[0].is_object()) {
    throw bad("cluster.scheduler must be an array of one {\"url\", \"port\"} object");
  }
  const json& entry = (*scheduler)[0];
  auto url = entry.find("url");
  if (url == entry.end() || !url->is_string() || url->get<std::string>().empty()) {
    throw bad("cluster.scheduler[0].url is missing or not a host name");
  }
  config.scheduler_url = url->get<std::string>();
  config.scheduler_port = int_at(entry, "port", "cluster.scheduler[0].port", 1, 65535);
  const int own_count = config.role == Role::kWorker   ? config.num_workers
                        : config.role == Role::kServer ? config.num_servers
                                                       : 1;
  if (config.index >= own_count) {
    throw bad("task.index " + std::to_string(config.index) + " is outside cluster." + type_name + " (" +
              std::to_string(own_count) + " entries)");
  }
  return config;
}

struct RankVariables {
  LayoutSource source;
  const char* rank;
  const char* size;
};
constexpr RankVariables kRankSources[] = {
    {LayoutSource::kTorch, "RANK", "WORLD_SIZE"},
    {LayoutSource::kOpenMpi, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
    {LayoutSource::kPmi, "PMI_RANK", "PMI_SIZE"},
    {LayoutSource::kSlurm, "SLURM_PROCID", "SLURM_NTASKS"},
};

std::optional<Sourced<int>> explicit_int(const std::optional<int>& v, const char* field) {
  if (v) return Sourced<int>{*v, std::string("explicit option ") + field};
  return std::nullopt;
}

template <typename T>
std::optional<T> first_of(std::initializer_list<std::optional<T>> options) {
  for (const auto& o : options) {
    if (o) return o;
  }
  return std::nullopt;
}

// The rank rule: servers first, then workers.
void apply_rank_rule(const EnvLookup& env, const JobOverrides& overrides, const RankVariables& vars,
                     LauncherLayout& layout) {
  layout.source = vars.source;
  const std::optional<Sourced<int>> size = int_variable(env, vars.size, 1, kMaxCount);
  if (!size) invalid(std::string(vars.size) + " is not set, but " + vars.rank + " is");
  layout.world_size = size->value;
  layout.rank = parse_int(*non_empty(env, vars.rank), vars.rank, 0, layout.world_size - 1);
  const int w = layout.world_size;
  std::optional<Sourced<int>> servers =
      first_of({explicit_int(overrides.num_servers, "num_servers"), int_variable(env, "DMLC_NUM_SERVER", 0, kMaxCount),
                int_variable(env, "DT_NUM_SERVER", 0, kMaxCount)});
  std::optional<Sourced<int>> workers =
      first_of({explicit_int(overrides.num_workers, "num_workers"), int_variable(env, "DMLC_NUM_WORKER", 1, kMaxCount)});
  const std::string world = std::string(vars.size) + "=" + std::to_string(w);
  if (servers && workers) {
    if (servers->value + workers->value != w) {
      invalid(world + " is not " + servers->variable + " (" + std::to_string(servers->value) + ") + " +
              workers->variable + " (" + std::to_string(workers->value) +
              "): under a rank-only launcher every rank is one server or one worker, and the scheduler runs "
              "outside the ranks");
    }
  } else if (servers) {
    if (servers->value >= w) {
      invalid(world + " leaves no rank for a worker after " + servers->variable + "=" +
              std::to_string(servers->value) + " servers");
    }
    workers = Sourced<int>{w - servers->value, std::string(vars.size) + " - " + servers->variable};
  } else if (workers) {
    if (workers->value >= w) {
      invalid(world + " leaves no rank for a server after " + workers->variable + "=" +
              std::to_string(workers->value) + " workers");
    }
    servers = Sourced<int>{w - workers->value, std::string(vars.size) + " - " + workers->variable};
  } else {
    if (w < 2) invalid(world + ": a job needs at least one server and one worker rank");
    servers = Sourced<int>{w / 2, std::string(vars.size) + " / 2"};
    workers = Sourced<int>{w - w / 2, std::string(vars.size) + " - " + std::string(vars.size) + " / 2"};
  }
  layout.num_servers = servers;
  layout.num_workers = workers;
  if (layout.rank < servers->value) {
    layout.role = Role::kServer;
  } else {
    layout.role = Role::kWorker;
    layout.worker_id = Sourced<int>{layout.rank - servers->value, std::string(vars.rank) + " - servers"};
  }
}

}  // namespace

std::string LauncherLayout::summary() const {
  std::string text = std::string("job layout from ") + layout_source_name(source);
  if (world_size > 0) {
    const auto plural = [](int n, const char* word) {
      return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
    };
    text += " (rank " + std::to_string(rank) + " of " + std::to_string(world_size) + ", " +
            plural(num_servers ? num_servers->value : 0, "server") + " + " +
            plural(num_workers ? num_workers->value : 0, "worker") + ")";
  }
  text += std::string(": ") + role_name(role);
  if (role == Role::kWorker) {
    text += worker_id ? " " + std::to_string(worker_id->value) : " (id from the scheduler)";
  } else if (role == Role::kServer && world_size > 0) {
    text += " " + std::to_string(rank);
  }
  return text;
}

LauncherLayout resolve_launcher_layout(const EnvLookup& env, const JobOverrides& overrides) {
  LauncherLayout layout;
  // Parsed only when consulted: a stale MX_CONFIG in a shell must not break
  // a job that DMLC_* describes completely.
  std::optional<MxConfig> mx;
  const auto mx_config = [&]() -> const MxConfig* {
    if (!mx) {
      const std::optional<std::string> text = non_empty(env, "MX_CONFIG");
      if (!text) return nullptr;
      mx = parse_mx_config(*text);
    }
    return &*mx;
  };

  // The role and worker id: from the first source that names a role.
  if (overrides.role) {
    layout.source = LayoutSource::kExplicit;
    layout.role = *overrides.role;
  } else if (auto role = non_empty(env, "DMLC_ROLE")) {
    layout.source = LayoutSource::kDmlc;
    layout.role = role_named(*role, "DMLC_ROLE");
  } else if (const MxConfig* config = mx_config()) {
    layout.source = LayoutSource::kMxConfig;
    layout.role = config->role;
    if (layout.role == Role::kWorker) layout.worker_id = Sourced<int>{config->index, "MX_CONFIG task.index"};
  } else {
    for (const RankVariables& vars : kRankSources) {
      if (non_empty(env, vars.rank)) {
        apply_rank_rule(env, overrides, vars, layout);
        break;
      }
    }
  }
  // MXNet reads DMLC_WORKER_ID without DMLC_ROLE too (a worker by default).
  if (layout.source == LayoutSource::kDmlc && layout.role == Role::kWorker && !layout.worker_id) {
    layout.worker_id = int_variable(env, "DMLC_WORKER_ID", 0, kMaxCount);
  }
  if (overrides.worker_id && layout.role == Role::kWorker) {
    layout.worker_id = explicit_int(overrides.worker_id, "worker_id");
  }

  // Every other value: from the first source that has it.
  if (!layout.num_servers) {
    layout.num_servers = first_of({explicit_int(overrides.num_servers, "num_servers"),
                                   int_variable(env, "DMLC_NUM_SERVER", 0, kMaxCount)});
  }
  if (!layout.num_workers) {
    layout.num_workers = first_of({explicit_int(overrides.num_workers, "num_workers"),
                                   int_variable(env, "DMLC_NUM_WORKER", 1, kMaxCount)});
  }
  if (overrides.root_uri) {
    layout.root_uri = Sourced<std::string>{*overrides.root_uri, "explicit option root_uri"};
  } else {
    layout.root_uri = text_variable(env, "DMLC_PS_ROOT_URI");
  }
  if (overrides.root_port) {
    layout.root_port = Sourced<std::string>{std::to_string(*overrides.root_port), "explicit option root_port"};
  } else {
    layout.root_port = text_variable(env, "DMLC_PS_ROOT_PORT");
  }
  if (!layout.num_servers || !layout.num_workers || !layout.root_uri || !layout.root_port) {
    if (const MxConfig* config = mx_config()) {
      if (!layout.num_servers) layout.num_servers = Sourced<int>{config->num_servers, "MX_CONFIG cluster.server"};
      if (!layout.num_workers) layout.num_workers = Sourced<int>{config->num_workers, "MX_CONFIG cluster.worker"};
      if (!layout.root_uri) layout.root_uri = Sourced<std::string>{config->scheduler_url, "MX_CONFIG cluster.scheduler"};
      if (!layout.root_port) {
        layout.root_port = Sourced<std::string>{std::to_string(config->scheduler_port), "MX_CONFIG cluster.scheduler"};
      }
    }
  }
  if (!layout.root_uri) layout.root_uri = text_variable(env, "MASTER_ADDR");
  if (!layout.root_port) layout.root_port = text_variable(env, "MASTER_PORT");
  if (!layout.root_uri) {
    if (auto nodes = non_empty(env, "SLURM_JOB_NODELIST")) {
      std::vector<std::string> hosts;
      try {
        hosts = expand_hostlist(*nodes);
      } catch (const Error& e) {
        invalid(std::string("SLURM_JOB_NODELIST: ") + e.what());
      }
      layout.root_uri = Sourced<std::string>{hosts.front(), "SLURM_JOB_NODELIST (first host)"};
    }
  }
  return layout;
}

}  // namespace dt::ps
