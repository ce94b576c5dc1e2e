#include "ps/server/request_handler.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "core/log.h"
#include "core/timeline/timeline.h"
#include "optim/optimizer.h"
#include "optim/optimizer_config.h"
#include "ps/server/reply_assembly.h"
#include "ps/transport/state_codec.h"

namespace dt::ps {

using core::Error;
using core::ErrorCode;

namespace {

// PS_VERBOSE=2: one line per slice of a data request.
void log_slice(const wire::DataRequest& request, const DecodedSlice& s) {
  const size_t bytes = s.data_bytes != 0 ? s.data_bytes : part_bytes(s.info);
  core::log(core::LogLevel::kTrace, "server",
            std::string(wire::EnumNameDataOp(request.op())) + " from worker " + std::to_string(request.worker_rank()) +
                ": key " + std::to_string(s.info.part.key) + " [" + std::to_string(s.info.part.begin) + ", " +
                std::to_string(s.info.part.end) + ") " + std::to_string(bytes) + " bytes round " +
                std::to_string(s.round));
}

// A slice's optimizer numbers (TensorSlice.learning_rate / rescale_grad)
// come from worker 0 alone, as the setting commands do, and hold numbers
// the optimizer takes; checked before any slice of the request is applied.
void check_numbers(int worker, const DecodedSlice& s) {
  if (s.numbers.empty()) return;
  const std::string what = "a push of key " + std::to_string(s.info.part.key);
  if (worker != 0) {
    throw Error(ErrorCode::kBadState, what + " from worker " + std::to_string(worker) +
                                          " carries optimizer numbers (rule: worker 0 owns the servers' "
                                          "optimizer settings)");
  }
  if (s.numbers.learning_rate) optim::Optimizer::check_learning_rate(*s.numbers.learning_rate, what);
  if (s.numbers.rescale_grad) optim::Optimizer::check_rescale_grad(*s.numbers.rescale_grad, what);
}

std::vector<DecodedSlice> decode_all(const Frame& frame, const wire::DataRequest& request, bool with_data) {
  std::vector<DecodedSlice> out;
  if (request.slices() == nullptr) return out;
  out.reserve(request.slices()->size());
  for (const auto* slice : *request.slices()) {
    out.push_back(decode_slice(frame, slice));
    if (core::log_enabled(core::LogLevel::kTrace)) log_slice(request, out.back());
    // An encoding may send no bytes at all (nothing above the threshold).
    if (with_data && out.back().data == nullptr && out.back().encoding == 0) {
      throw Error(ErrorCode::kProtocol, "a push of key " + std::to_string(out.back().info.part.key) + " carries no data");
    }
    check_numbers(request.worker_rank(), out.back());
  }
  return out;
}

}  // namespace

ServerRequestHandler::ServerRequestHandler(int num_workers, uint64_t memory_limit_bytes,
                                           const ops::cpu::ReductionSettings& reduction)
    : store_(num_workers, memory_limit_bytes, reduction) {}

void ServerRequestHandler::fail(const Error& error) {
  agreement_.fail(error);
  store_.fail(error);
}

RequestServer::Reply ServerRequestHandler::tracked(int worker, wire::DataOp op, const std::vector<DecodedSlice>& slices,
                                                  const RequestServer::Reply& reply) {
  if (slices.empty()) return reply;
  const DecodedSlice& first = slices.front();
  return resent_.track(ResentRequests::Identity{worker, static_cast<int>(op), first.info.part.key,
                                                first.info.part.begin, first.round},
                       reply);
}

void ServerRequestHandler::part_state(const Frame& frame, const wire::PartState& request, uint32_t pipe,
                                      const RequestServer::Reply& reply) {
  speakers_.server(request.server_rank(), pipe, "a part's state");
  // A rejoined server takes the optimizer's numbers with each part (see
  // take_source_optimizer_numbers).
  std::optional<std::pair<double, double>> numbers;
  if (store_.has_optimizer()) numbers.emplace(store_.learning_rate(), store_.rescale_grad());
  if (request.part() == nullptr) throw Error(ErrorCode::kProtocol, "a part-state request names no part");
  const DecodedSlice part = decode_slice(frame, request.part());
  const PartInfo info = part.info;
  store_.part_state(info, part.round, [reply, info, numbers](const Error* error,
                                                                       const ServerKeyStore::PartState& state) {
    if (error) {
      reply(encode_data_error(error->code(), error->what()));
      return;
    }
    try {
      reply(part_state_reply(info, state, numbers));
    } catch (const std::bad_alloc&) {
      reply(encode_data_error(ErrorCode::kOutOfMemory, "server out of memory answering a part's state"));
    }
  });
}

void ServerRequestHandler::handle(Message request, const RequestServer::Reply& reply) {
  const uint32_t pipe = request.pipe_id();
  try {
    Frame frame = Frame::parse(std::move(request));
    if (const auto* asked = frame.body<wire::ServerSettings>()) {
      // Asked for in a server's name, but not bound to the connection: the
      // asker closes it at once and fills on another, and reading the
      // job's settings gives no say in it.
      if (asked->server_rank() < 0) {
        throw Error(ErrorCode::kProtocol, "the job's settings in the name of server " +
                                              std::to_string(asked->server_rank()) + " (rule: servers ask for them)");
      }
      reply(encode_server_settings_reply(settings()));
      return;
    }
    if (const auto* joining = frame.body<wire::Join>()) {
      join(worker_of(joining->worker_rank(), pipe), *joining, reply);
      return;
    }
    if (const auto* asked = frame.body<wire::PartState>()) {
      part_state(frame, *asked, pipe, reply);
      return;
    }
    if (const auto* asked = frame.body<wire::GetOptimizerState>()) {
      const int worker = worker_of(asked->worker_rank(), pipe);
      core::log(core::LogLevel::kTrace, "server", "GetOptimizerState from worker " + std::to_string(worker));
      reply(encode_optimizer_state(-1, store_.optimizer_state()));
      return;
    }
    if (const auto* state = frame.body<wire::OptimizerState>()) {
      const int worker = worker_of(state->worker_rank(), pipe);
      core::log(core::LogLevel::kTrace, "server", "SetOptimizerState from worker " + std::to_string(worker));
      only_worker_0(worker, "SetOptimizerState");
      store_.load_optimizer_state(
          read_named_arrays(frame, state->names(), state->arrays(), core::make_cpu_context(), "optimizer state"));
      reply(encode_data_reply({}).message);
      return;
    }
    const auto* data = frame.body<wire::DataRequest>();
    if (data == nullptr) {
      throw Error(ErrorCode::kProtocol, std::string("a server takes DataRequest messages, got ") + body_name(frame.type()));
    }
    worker_request(frame, *data, worker_of(data->worker_rank(), pipe), reply);
  } catch (const Error& error) {
    if (error.code() == ErrorCode::kProtocol || error.code() == ErrorCode::kBadState ||
        error.code() == ErrorCode::kOutOfMemory) {
      log_.print("refused a request on connection " + std::to_string(pipe) + ": " + error.what());
    }
    reply(encode_data_error(error.code(), error.what()));
  } catch (const std::bad_alloc&) {
    reply(encode_data_error(ErrorCode::kOutOfMemory, "server out of memory"));
  } catch (const std::exception& error) {
    reply(encode_data_error(ErrorCode::kInternal, error.what()));
  }
}

void ServerRequestHandler::worker_request(const Frame& frame, const wire::DataRequest& data, int worker,
                                          const RequestServer::Reply& reply) {
  // A request's whole handling; its parts' sums, updates and replies nest inside.
  const core::timeline::Span receive("server", "receive", {"worker", worker},
                                     {"slices", data.slices() ? static_cast<int64_t>(data.slices()->size()) : 0});
  if (data.slices() == nullptr || data.slices()->size() == 0) {
    core::log(core::LogLevel::kTrace, "server",
              std::string(wire::EnumNameDataOp(data.op())) + " from worker " + std::to_string(worker));
  }
  const auto finite_number = [&](const char* what) {
    if (!std::isfinite(data.number())) {
      throw Error(ErrorCode::kInvalidArgument, std::string(what) + " of " + std::to_string(data.number()) +
                                                   " (not a finite number)");
    }
  };
  switch (data.op()) {
    case wire::DataOp::Init: {
      const std::string type = data.text() ? data.text()->str() : "";
      if (type != "dist_sync" && type != "dist_async") {
        throw Error(ErrorCode::kProtocol, "an init request names the kvstore type '" + type + "'");
      }
      store_.set_mode(type == "dist_sync" ? ServerKeyStore::Mode::kSync : ServerKeyStore::Mode::kAsync);
      const auto slices = decode_all(frame, data, true);
      for (const DecodedSlice& s : slices) store_.init(worker, s.info, s.data, s.data_bytes, data.may_resend());
      reply(encode_data_reply({}).message);
      return;
    }
    case wire::DataOp::Push: {
      const auto slices = decode_all(frame, data, true);
      push_pull(store_, worker, slices, true, false, agreement_.pushing(),
                data.may_resend() ? tracked(worker, data.op(), slices, reply) : reply, data.may_resend());
      return;
    }
    case wire::DataOp::Pull: {
      const auto slices = decode_all(frame, data, false);
      push_pull(store_, worker, slices, false, true, nullptr,
                data.may_resend() ? tracked(worker, data.op(), slices, reply) : reply, false);
      return;
    }
    case wire::DataOp::PushPull: {
      const auto slices = decode_all(frame, data, true);
      push_pull(store_, worker, slices, true, true, agreement_.pushing(),
                data.may_resend() ? tracked(worker, data.op(), slices, reply) : reply, data.may_resend());
      return;
    }
    case wire::DataOp::SetOptimizer:
      agreement_.set_optimizer(worker, optim::OptimizerConfig::from_json(data.text() ? data.text()->str() : ""), reply);
      return;
    case wire::DataOp::SetRescaleGrad:
      only_worker_0(worker, "SetRescaleGrad");
      finite_number("SetRescaleGrad");
      store_.set_rescale_grad(data.number());
      agreement_.rescale_grad_set();
      reply(encode_data_reply({}).message);
      return;
    case wire::DataOp::SetLearningRate:
      only_worker_0(worker, "SetLearningRate");
      finite_number("SetLearningRate");
      store_.set_learning_rate(data.number());
      agreement_.learning_rate_set();
      reply(encode_data_reply({}).message);
      return;
    case wire::DataOp::SetGradientCompression:
      agreement_.set_compression(worker, compression::CompressionConfig::parse(data.text() ? data.text()->str() : ""));
      reply(encode_data_reply({}).message);
      return;
  }
  throw Error(ErrorCode::kProtocol, "unknown data op " + std::to_string(static_cast<int>(data.op())));
}

int ServerRequestHandler::worker_of(int worker, uint32_t pipe) {
  if (worker < 0 || worker >= store_.num_workers()) {
    throw Error(ErrorCode::kProtocol, "a data request from worker " + std::to_string(worker) + " of " +
                                          std::to_string(store_.num_workers()));
  }
  speakers_.check(worker, pipe);
  return worker;
}

void ServerRequestHandler::only_worker_0(int worker, const char* what) {
  if (worker != 0) {
    throw Error(ErrorCode::kBadState, std::string(what) + " from worker " + std::to_string(worker) +
                                          " (rule: worker 0 owns the servers' optimizer settings)");
  }
}

void ServerRequestHandler::join(int worker, const wire::Join& request, const RequestServer::Reply& reply) {
  core::log(core::LogLevel::kTrace, "server", "Join from worker " + std::to_string(worker));
  if (request.question()) {
    reply(encode_data_reply({}, {}, store_.join_floor(worker)).message);
    return;
  }
  const int64_t pid = request.pid();
  const int64_t round = request.round();
  // A pid of 0 would pass for the worker that started with the job.
  if (round < 0 || round > static_cast<int64_t>(1e15) || pid <= 0) {
    throw Error(ErrorCode::kProtocol, "a join request needs a round and the worker's pid, got " +
                                          std::to_string(round) + " and " + std::to_string(pid));
  }
  store_.join(worker, pid, round);
  bool sync = false;  // no mode yet: no init reached this server, no rounds either
  try {
    sync = store_.mode() == ServerKeyStore::Mode::kSync;
  } catch (const Error&) {
  }
  if (sync) {
    core::logf(core::LogLevel::kInfo, "server",
               "worker %d (pid %lld) joined the running job; its pushes count from round %lld", worker,
               static_cast<long long>(pid), static_cast<long long>(round));
  } else {
    core::logf(core::LogLevel::kInfo, "server", "worker %d (pid %lld) joined the running job", worker,
               static_cast<long long>(pid));
  }
  reply(encode_data_reply({}).message);
}

}  // namespace dt::ps
