#include "environment.h"

#include <array>
#include <optional>

extern char** environ;

namespace dt::dtrun {

const char* role_name(Role role) {
  switch (role) {
    case Role::kScheduler:
      return "scheduler";
    case Role::kServer:
      return "server";
    case Role::kWorker:
      return "worker";
  }
  return "unknown";
}

namespace {
constexpr std::array<const char*, 14> kLauncherVariables = {
    "DMLC_ROLE",        "DMLC_PS_ROOT_URI",        "DMLC_PS_ROOT_PORT", "DMLC_NUM_SERVER",
    "DMLC_NUM_WORKER",  "DMLC_WORKER_ID",          "DT_PS_PORT_FILE",   "DT_PS_ROOT_URL",
    kRestartCountVariable, kWorkerRestartCountVariable, kLocalRankVariable, kLocalSizeVariable,
    "LOCAL_RANK",       "LOCAL_WORLD_SIZE",
};
}  // namespace

bool is_launcher_variable(const std::string& name) {
  for (const char* v : kLauncherVariables) {
    if (name == v) return true;
  }
  return false;
}

EnvMap current_environment() {
  EnvMap env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string entry(*e);
    const std::string::size_type eq = entry.find('=');
    if (eq == std::string::npos) continue;
    env.emplace(entry.substr(0, eq), entry.substr(eq + 1));
  }
  return env;
}

EnvMap user_settings(const EnvMap& inherited, const Options& options, Role role) {
  EnvMap out;
  const auto apply = [&](const std::vector<EnvSetting>& settings) {
    for (const EnvSetting& s : settings) {
      if (!s.from_caller) {
        out[s.name] = s.value;
      } else if (auto it = inherited.find(s.name); it != inherited.end()) {
        out[s.name] = it->second;
      }
    }
  };
  apply(options.env);
  apply(role == Role::kWorker ? options.env_worker : options.env_server);
  return out;
}

namespace {

// role: nullopt for a launcher's own environment (no role settings).
EnvMap environment_for(const EnvMap& inherited, const Options& options, const JobLayout& layout,
                       std::optional<Role> role, int rank, std::optional<LocalPlace> local) {
  EnvMap env = inherited;
  // A shell that ran a job by hand may still export these; they must not leak
  // into a role that does not use them.
  for (const char* v : kLauncherVariables) env.erase(v);
  if (role) {
    for (auto& [name, value] : user_settings(inherited, options, *role)) env[name] = value;
  } else {
    Options common = options;
    common.env_server.clear();
    common.env_worker.clear();
    for (auto& [name, value] : user_settings(inherited, common, Role::kWorker)) env[name] = value;
  }
  env.emplace("OMP_WAIT_POLICY", "passive");
  if (role) env["DMLC_ROLE"] = role_name(*role);
  env["DMLC_PS_ROOT_URI"] = layout.root_uri;
  env["DMLC_PS_ROOT_PORT"] = std::to_string(role == Role::kScheduler ? 0 : layout.root_port);
  env["DMLC_NUM_SERVER"] = std::to_string(layout.num_servers);
  env["DMLC_NUM_WORKER"] = std::to_string(layout.num_workers);
  if (role == Role::kWorker) {
    env["DMLC_WORKER_ID"] = std::to_string(rank);
    const LocalPlace place = local.value_or(LocalPlace{rank, layout.num_workers});
    env[kLocalRankVariable] = env["LOCAL_RANK"] = std::to_string(place.rank);
    env[kLocalSizeVariable] = env["LOCAL_WORLD_SIZE"] = std::to_string(place.size);
  }
  if (role == Role::kScheduler && !layout.port_file.empty()) env["DT_PS_PORT_FILE"] = layout.port_file;
  if (!layout.interface.empty()) env["DMLC_INTERFACE"] = layout.interface;
  env[kRestartCountVariable] = std::to_string(layout.restart_count);
  return env;
}

}  // namespace

EnvMap child_environment(const EnvMap& inherited, const Options& options, const JobLayout& layout, Role role,
                         int rank, std::optional<LocalPlace> local) {
  return environment_for(inherited, options, layout, role, rank, local);
}

EnvMap launcher_environment(const EnvMap& inherited, const Options& options, const JobLayout& layout) {
  return environment_for(inherited, options, layout, std::nullopt, -1, std::nullopt);
}

std::vector<std::string> to_envp(const EnvMap& env) {
  std::vector<std::string> out;
  out.reserve(env.size());
  for (const auto& [name, value] : env) out.push_back(name + "=" + value);
  return out;
}

}  // namespace dt::dtrun
