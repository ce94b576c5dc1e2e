#include "ps/server/job_settings.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <utility>
#include <vector>

namespace dt::ps {

using core::Error;
using core::ErrorCode;

namespace {

std::string number_text(double value) {
  char text[64];
  std::snprintf(text, sizeof text, "%.17g", value);
  return text;
}

double number_of(const std::string& name, const std::string& text) {
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || end == nullptr || *end != '\0' || !std::isfinite(value)) {
    throw Error(ErrorCode::kProtocol, "the job's settings: " + name + "=" + text + " is not a finite number");
  }
  return value;
}

// "rank:pid,rank:pid" (the joined line of the job's settings), read
// strictly: ranks of the job's workers, positive pids.
std::vector<std::pair<int, int64_t>> joined_workers_of(const std::string& text, int num_workers) {
  std::vector<std::pair<int, int64_t>> joined;
  if (text.empty()) return joined;
  for (size_t start = 0; start <= text.size();) {
    const size_t end = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, end - start);
    start = end + 1;
    const size_t colon = item.find(':');
    const std::string rank = item.substr(0, colon), pid = colon == std::string::npos ? "" : item.substr(colon + 1);
    if (!is_decimal_id(rank) || !is_decimal_id(pid) || std::stoll(rank) >= num_workers || std::stoll(pid) == 0) {
      throw Error(ErrorCode::kProtocol, "the job's settings: joined worker '" + item.substr(0, 40) + "'");
    }
    joined.emplace_back(static_cast<int>(std::stoll(rank)), std::stoll(pid));
  }
  return joined;
}

}  // namespace

bool is_decimal_id(const std::string& text) {
  return !text.empty() && text.size() <= 18 && text.find_first_not_of("0123456789") == std::string::npos;
}

std::string job_settings_text(const ServerKeyStore& store, const JobAgreement& agreement) {
  std::string mode = "none";
  try {
    mode = store.mode() == ServerKeyStore::Mode::kSync ? "dist_sync" : "dist_async";
  } catch (const Error&) {
    // No init has reached this server yet: no mode.
  }
  std::string text = "mode=" + mode + "\n";
  const auto optimizer = agreement.optimizer();
  const auto compression = agreement.compression();
  text += "optimizer=" + (optimizer ? optimizer->to_json() : std::string()) + "\n";
  text += "compression=" + (compression ? compression->to_string() : std::string()) + "\n";
  if (store.has_optimizer()) {
    text += "learning_rate=" + number_text(store.learning_rate()) + "\n";
    text += "rescale_grad=" + number_text(store.rescale_grad()) + "\n";
  }
  // Workers that joined the running job (rank:pid,...): a rejoining server
  // missed their Join requests.
  std::string joined;
  for (const auto& [worker, pid] : store.joined_workers()) {
    joined += (joined.empty() ? "" : ",") + std::to_string(worker) + ":" + std::to_string(pid);
  }
  if (!joined.empty()) text += "joined=" + joined + "\n";
  return text;
}

void apply_job_settings(const std::string& text, ServerKeyStore& store, JobAgreement& agreement) {
  std::map<std::string, std::string> values;
  size_t start = 0;
  while (start < text.size()) {
    const size_t end = std::min(text.find('\n', start), text.size());
    const std::string line = text.substr(start, end - start);
    start = end + 1;
    if (line.empty()) continue;
    const size_t eq = line.find('=');
    const std::string name = line.substr(0, eq);
    if (eq == std::string::npos || values.count(name) != 0 ||
        (name != "mode" && name != "optimizer" && name != "compression" && name != "learning_rate" &&
         name != "rescale_grad" && name != "joined")) {
      throw Error(ErrorCode::kProtocol, "the job's settings: a line '" + line.substr(0, 80) + "' not understood");
    }
    values[name] = line.substr(eq + 1);
  }
  const std::string mode = values.count("mode") != 0 ? values["mode"] : "";
  if (mode != "dist_sync" && mode != "dist_async" && mode != "none") {
    throw Error(ErrorCode::kProtocol, "the job's settings: mode '" + mode + "'");
  }
  if (mode != "none") store.set_mode(mode == "dist_sync" ? ServerKeyStore::Mode::kSync : ServerKeyStore::Mode::kAsync);
  if (!values["compression"].empty()) {
    agreement.set_compression(0, compression::CompressionConfig::parse(values["compression"]));
  }
  if (!values["optimizer"].empty()) {
    agreement.adopt_optimizer(optim::OptimizerConfig::from_json(values["optimizer"]));
    if (values.count("learning_rate") != 0) store.set_learning_rate(number_of("learning_rate", values["learning_rate"]));
    if (values.count("rescale_grad") != 0) store.set_rescale_grad(number_of("rescale_grad", values["rescale_grad"]));
  }
  // As if their Join requests had come here: the news of their
  // predecessors' losses, which this server hears from the scheduler, then
  // passes them by.
  for (const auto& [worker, pid] : joined_workers_of(values["joined"], store.num_workers())) {
    store.join(worker, pid, store.join_floor(worker));
  }
}

}  // namespace dt::ps
