#include "ps/job/environment_options.h"

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <optional>

#include "core/error.h"
#include "core/log.h"
#include "core/parameter_table.h"
#include "ops/cpu/reduction_pool.h"

namespace dt::ps {

using core::Error;
using core::ErrorCode;

namespace {

std::optional<std::string> getenv_lookup(const char* name) {
  const char* v = core::read_parameter(name);
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}

std::optional<std::string> non_empty(const EnvLookup& env, const char* name) {
  auto v = env(name);
  if (!v || v->empty()) return std::nullopt;
  return v;
}

void read_seconds(const EnvLookup& env, const char* name, double& out) {
  const auto text = non_empty(env, name);
  if (!text) return;
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text->c_str(), &end);
  if (errno != 0 || *end != '\0' || !(v > 0) || v > 1e9) {
    throw Error(ErrorCode::kInvalidArgument,
                std::string(name) + "=\"" + *text + "\" is not a positive number of seconds");
  }
  out = v;
}

// DT_STALL_WARNING_S: seconds as read_seconds, or 0 for off.
void read_stall_seconds(const EnvLookup& env, double& out) {
  const auto text = non_empty(env, "DT_STALL_WARNING_S");
  if (text && *text == "0") {
    out = 0;
    return;
  }
  read_seconds(env, "DT_STALL_WARNING_S", out);
}

std::optional<uint64_t> read_count(const EnvLookup& env, const char* name, const char* unit) {
  const auto text = non_empty(env, name);
  if (!text) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(text->c_str(), &end, 10);
  if (errno != 0 || *end != '\0' || v == 0 || (*text)[0] == '-' || v > (1ull << 50)) {
    throw Error(ErrorCode::kInvalidArgument,
                std::string(name) + "=\"" + *text + "\" is not a positive count of " + unit);
  }
  return v;
}

}  // namespace

PsOptions ps_options_from_environment(const EnvLookup& env, PsOptions o) {
  read_seconds(env, "DT_STARTUP_TIMEOUT_S", o.startup_timeout_s);
  read_seconds(env, "DT_REQUEST_TIMEOUT_S", o.request_timeout_s);
  read_seconds(env, "DT_HEARTBEAT_INTERVAL_S", o.heartbeat_interval_s);
  read_seconds(env, "DT_HEARTBEAT_TIMEOUT_S", o.heartbeat_timeout_s);
  read_seconds(env, "DT_SHUTDOWN_TIMEOUT_S", o.shutdown_timeout_s);
  read_stall_seconds(env, o.stall_warning_s);
  ps_verbose_level(env);  // refused here, with the other knobs, when malformed
  if (auto elements = read_count(env, "MXNET_KVSTORE_BIGARRAY_BOUND", "elements")) {
    o.bigarray_bound_bytes = *elements * sizeof(float);
  }
  if (auto bytes = read_count(env, "DT_BIGARRAY_BOUND_BYTES", "bytes")) o.bigarray_bound_bytes = *bytes;
  if (auto threads = read_count(env, "MXNET_KVSTORE_REDUCTION_NTHREADS", "threads")) {
    if (*threads > static_cast<uint64_t>(ops::cpu::ReductionPool::kMaxThreads)) {
      throw Error(ErrorCode::kInvalidArgument, "MXNET_KVSTORE_REDUCTION_NTHREADS=\"" + std::to_string(*threads) +
                                                   "\" is more than " +
                                                   std::to_string(ops::cpu::ReductionPool::kMaxThreads) + " threads");
    }
    o.reduction_threads = static_cast<int>(*threads);
  }
  // ps-lite: PS_RESEND=1 turns resending on, PS_RESEND_TIMEOUT in ms
  // (default 1000) is how long a request waits for its reply before.
  if (auto resend = non_empty(env, "PS_RESEND"); resend && *resend != "0") {
    uint64_t ms = 1000;
    if (auto timeout = read_count(env, "PS_RESEND_TIMEOUT", "milliseconds")) ms = *timeout;
    o.resend_timeout_s = static_cast<double>(ms) / 1000.0;
  }
  if (auto policy = non_empty(env, "DT_WORKER_LOSS")) {
    if (*policy == "fail") {
      o.worker_loss = WorkerLossPolicy::kFail;
    } else if (*policy == "continue") {
      o.worker_loss = WorkerLossPolicy::kContinue;
    } else {
      throw Error(ErrorCode::kInvalidArgument,
                  "DT_WORKER_LOSS=\"" + *policy + "\" is not a policy: expected \"fail\" or \"continue\"");
    }
  }
  if (auto replicas = non_empty(env, "DT_SERVER_REPLICATION")) {
    if (*replicas != "0" && *replicas != "1") {
      throw Error(ErrorCode::kInvalidArgument, "DT_SERVER_REPLICATION=\"" + *replicas +
                                                   "\" is not a replication factor: expected 0 or 1 (one replica "
                                                   "per key part)");
    }
    o.server_replicas = *replicas == "1" ? 1 : 0;
  }
  return o;
}

PsOptions ps_options_from_environment() { return ps_options_from_environment(getenv_lookup); }

std::vector<std::string> mxnet_knob_notes(const EnvLookup& env) {
  std::vector<std::string> notes;
  for (size_t i = 0; i < core::parameter_count(); ++i) {
    const core::Parameter& p = core::parameters()[i];
    if (p.support != core::Support::kRefused) continue;
    if (auto v = env(p.name)) notes.push_back(std::string(p.name) + "=" + *v + ": refused, not honoured here: " + p.doc);
  }
  return notes;
}

int ps_verbose_level(const EnvLookup& env) {
  const auto text = non_empty(env, "PS_VERBOSE");
  if (!text) return 0;
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(text->c_str(), &end, 10);
  if (errno != 0 || *end != '\0' || v < 0) {
    throw Error(ErrorCode::kInvalidArgument, "PS_VERBOSE=\"" + *text + "\" is not a log level (0, 1 or 2)");
  }
  return v > 2 ? 2 : static_cast<int>(v);
}

int ps_verbose() {
  const core::LogLevel level = core::log_level();
  if (level >= core::LogLevel::kTrace) return 2;
  return level >= core::LogLevel::kDebug ? 1 : 0;
}

void verbose_log(int level, const std::string& line) {
  const core::LogLevel as = level >= 2 ? core::LogLevel::kTrace : core::LogLevel::kDebug;
  // The lines start with who speaks ("scheduler: ..."): that is the facility.
  const size_t colon = line.find(": ");
  if (colon == std::string::npos) {
    core::log(as, "", line);
  } else {
    core::log(as, line.substr(0, colon), line.substr(colon + 2));
  }
}

void log_mxnet_knob_notes_once() {
  static std::atomic<bool> logged{false};
  if (logged.exchange(true)) return;
  for (const std::string& note : mxnet_knob_notes(getenv_lookup)) core::log(core::LogLevel::kWarning, "", note);
}

}  // namespace dt::ps
