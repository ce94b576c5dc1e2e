#include "ps/server/job_settings.h"

#include <cmath>

#include "ps/transport/data_codec.h"

namespace dt::ps {

using core::Error;
using core::ErrorCode;

namespace {

double finite(const char* name, double value) {
  if (!std::isfinite(value)) {
    throw Error(ErrorCode::kProtocol, std::string("the job's settings: ") + name + "=" + std::to_string(value) +
                                          " is not a finite number");
  }
  return value;
}

}  // namespace

JobSettings job_settings_of(const ServerKeyStore& store, const JobAgreement& agreement) {
  JobSettings settings;
  try {
    settings.mode = store.mode();
  } catch (const Error&) {
    // No init has reached this server yet: no mode.
  }
  const auto optimizer = agreement.optimizer();
  const auto compression = agreement.compression();
  if (optimizer) settings.optimizer = optimizer->to_json();
  if (compression) settings.compression = compression->to_string();
  if (store.has_optimizer()) {
    settings.learning_rate = store.learning_rate();
    settings.rescale_grad = store.rescale_grad();
  }
  settings.joined = store.joined_workers();
  return settings;
}

void apply_job_settings(const JobSettings& settings, ServerKeyStore& store, JobAgreement& agreement) {
  for (const auto& [rank, pid] : settings.joined) {
    if (rank < 0 || rank >= store.num_workers() || pid <= 0) {
      throw Error(ErrorCode::kProtocol, "the job's settings: joined worker " + std::to_string(rank) + " (pid " +
                                            std::to_string(pid) + ")");
    }
  }
  if (settings.mode) store.set_mode(*settings.mode);
  if (!settings.compression.empty()) {
    agreement.set_compression(0, compression::CompressionConfig::parse(settings.compression));
  }
  if (!settings.optimizer.empty()) {
    agreement.adopt_optimizer(optim::OptimizerConfig::from_json(settings.optimizer));
    if (settings.learning_rate) store.set_learning_rate(finite("learning_rate", *settings.learning_rate));
    if (settings.rescale_grad) store.set_rescale_grad(finite("rescale_grad", *settings.rescale_grad));
  }
  // As if their Join requests had come here: the news of their
  // predecessors' losses, which this server hears from the scheduler, then
  // passes them by.
  for (const auto& [worker, pid] : settings.joined) store.join(worker, pid, store.join_floor(worker));
}

Message encode_server_settings_request(int server_rank) {
  flatbuffers::FlatBufferBuilder fbb(64);
  return make_message(fbb, wire::CreateServerSettings(fbb, server_rank));
}

Message encode_server_settings_reply(const JobSettings& settings) {
  flatbuffers::FlatBufferBuilder fbb(256 + settings.optimizer.size() + settings.compression.size());
  std::vector<flatbuffers::Offset<wire::JoinedWorker>> joined;
  for (const auto& [rank, pid] : settings.joined) joined.push_back(wire::CreateJoinedWorker(fbb, rank, pid));
  const auto text = [&](const std::string& s) {
    return s.empty() ? flatbuffers::Offset<flatbuffers::String>() : fbb.CreateString(s);
  };
  const auto optimizer = text(settings.optimizer);
  const auto compression = text(settings.compression);
  const auto joined_vector = joined.empty() ? 0 : fbb.CreateVector(joined);
  wire::JobMode mode = wire::JobMode::None;
  if (settings.mode) mode = *settings.mode == ServerKeyStore::Mode::kSync ? wire::JobMode::DistSync : wire::JobMode::DistAsync;
  return make_message(fbb, wire::CreateServerSettingsReply(fbb, mode, optimizer, wire_number(settings.learning_rate),
                                                           wire_number(settings.rescale_grad), compression,
                                                           joined_vector));
}

JobSettings decode_server_settings_reply(const wire::ServerSettingsReply& reply) {
  JobSettings settings;
  switch (reply.mode()) {
    case wire::JobMode::None:
      break;
    case wire::JobMode::DistSync:
      settings.mode = ServerKeyStore::Mode::kSync;
      break;
    case wire::JobMode::DistAsync:
      settings.mode = ServerKeyStore::Mode::kAsync;
      break;
    default:
      throw Error(ErrorCode::kProtocol,
                  "the job's settings: mode " + std::to_string(static_cast<int>(reply.mode())) + " not known");
  }
  if (reply.optimizer()) settings.optimizer = reply.optimizer()->str();
  if (reply.compression()) settings.compression = reply.compression()->str();
  settings.learning_rate = read_number(reply.learning_rate());
  settings.rescale_grad = read_number(reply.rescale_grad());
  if (reply.joined()) {
    for (const auto* worker : *reply.joined()) {
      if (worker == nullptr) throw Error(ErrorCode::kProtocol, "the job's settings: a null joined worker");
      settings.joined.emplace_back(worker->rank(), worker->pid());
    }
  }
  return settings;
}

}  // namespace dt::ps
