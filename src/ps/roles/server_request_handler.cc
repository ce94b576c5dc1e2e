#include "ps/roles/server_request_handler.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "optim/optimizer.h"
#include "optim/optimizer_config.h"
#include "ps/job/environment_options.h"
#include "ps/transport/data_codec.h"

namespace dt::ps {

using core::Error;
using core::ErrorCode;

namespace {

// One request's outstanding work (pushes consumed, pulls answered), plus one
// count for the handler itself so the reply cannot leave before every part
// was handed to the store. The last to finish sends the reply.
//
// A reply whose pulls all go in full is sized up front and the pulls copy
// straight into it. When a pull may come encoded (its size known only then),
// the reply is deferred: each pull's answer is kept (an encoding by
// reference, it never changes) and the reply assembled by the last one.
class Completion {
 public:
  Completion(RequestServer::Reply reply, size_t count) : reply_(reply), remaining_(count + 1) {}

  void fail(const Error& error) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!error_) error_ = std::make_unique<Error>(error);
  }
  // A deferred reply of these slices (data_bytes and encoding come with
  // their answers).
  void defer(std::vector<SliceSpec> specs) {
    deferred_ = std::move(specs);
    kept_.resize(deferred_.size());
  }
  // Slice i's answer, for a deferred reply.
  void keep(size_t i, const ServerKeyStore::PullAnswer& answer) {
    deferred_[i].data_bytes = answer.bytes;
    deferred_[i].encoding = answer.encoding;
    if (answer.shared) {
      kept_[i].shared = answer.shared;
    } else {
      const auto* begin = static_cast<const uint8_t*>(answer.data);
      kept_[i].copy.assign(begin, begin + answer.bytes);
    }
  }
  // A push-only request with slices kept at new copies still being filled
  // (said in the reply, DataReply.held). Before the handler's own finish.
  void mark_held() { held_ = true; }
  // Settles n pieces of work; the last one replies.
  void finish(size_t n = 1) {
    if (remaining_.fetch_sub(n, std::memory_order_acq_rel) != n) return;
    if (error_) {
      reply_(encode_data_error(error_->code(), error_->what()));
    } else if (held_) {
      reply_(encode_held_push_reply());
    } else if (!kept_.empty()) {
      reply_(assemble());
    } else {
      reply_(std::move(answer.message));
    }
  }
  EncodedData answer;  // filled by pull callbacks in disjoint regions

 private:
  struct Kept {
    std::shared_ptr<const std::vector<uint8_t>> shared;
    std::vector<uint8_t> copy;
  };
  Message assemble() {
    EncodedData out = encode_data_reply(deferred_);
    for (size_t i = 0; i < kept_.size(); ++i) {
      if (deferred_[i].data_bytes == 0) continue;
      const uint8_t* from = kept_[i].shared ? kept_[i].shared->data() : kept_[i].copy.data();
      std::memcpy(out.slice_data[i], from, deferred_[i].data_bytes);
    }
    return std::move(out.message);
  }

  std::vector<SliceSpec> deferred_;  // written in disjoint places by the pulls' callbacks
  std::vector<Kept> kept_;

  RequestServer::Reply reply_;
  std::atomic<size_t> remaining_;
  std::atomic<bool> held_{false};
  std::mutex mutex_;
  std::unique_ptr<Error> error_;
};

// PS_VERBOSE=2: one line per slice of a data request.
void log_slice(const wire::DataRequest& request, const DecodedSlice& s) {
  const size_t bytes = s.data_bytes != 0 ? s.data_bytes : part_bytes(s.info);
  verbose_log(2, std::string("server: ") + wire::EnumNameDataOp(request.op()) + " from worker " +
                     std::to_string(request.worker_rank()) + ": key " + std::to_string(s.info.part.key) + " [" +
                     std::to_string(s.info.part.begin) + ", " + std::to_string(s.info.part.end) + ") " +
                     std::to_string(bytes) + " bytes round " + std::to_string(s.round));
}

// A pid or rank as peers write it: 1 to 18 decimal digits.
bool is_decimal(const std::string& text) {
  return !text.empty() && text.size() <= 18 && text.find_first_not_of("0123456789") == std::string::npos;
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
    if (ps_verbose() >= 2) log_slice(request, out.back());
    // An encoding may send no bytes at all (nothing above the threshold).
    if (with_data && out.back().data == nullptr && out.back().encoding == 0) {
      throw Error(ErrorCode::kProtocol, "a push of key " + std::to_string(out.back().info.part.key) + " carries no data");
    }
    check_numbers(request.worker_rank(), out.back());
  }
  return out;
}

// A compressed push's float32 values; the job's codec must be the one the
// slice names.
std::vector<float> decode_push(const compression::GradientCodec* codec, const DecodedSlice& s) {
  const auto mode = static_cast<compression::CompressionMode>(s.encoding);
  if (codec == nullptr || codec->config().mode != mode) {
    throw Error(ErrorCode::kProtocol, "a push of key " + std::to_string(s.info.part.key) + " encoded with mode " +
                                          std::to_string(s.encoding) + ", but the job compresses with " +
                                          (codec ? codec->config().to_string() : std::string("none")));
  }
  std::vector<float> values(static_cast<size_t>(s.info.part.end - s.info.part.begin), 0.0f);
  codec->decode_add(s.data, s.data_bytes, values.data(), values.size());
  return values;
}

// Push and/or pull every slice; the reply leaves when all are done.
void push_pull(ServerKeyStore& store, int worker, const std::vector<DecodedSlice>& slices, bool push, bool pull,
               const compression::GradientCodec* codec, const RequestServer::Reply& reply, bool resent) {
  std::vector<SliceSpec> specs;
  // Compressed pulls' sizes are known once they are answered.
  const bool deferred = pull && !slices.empty() && store.pulls_may_be_encoded();
  if (pull) {
    // The reply is sized from the parts as stored, never from what the
    // request claims: an unknown or misdescribed part is refused first.
    for (const DecodedSlice& s : slices) store.check_part(s.info, "pull");
    for (const DecodedSlice& s : slices) specs.push_back(SliceSpec{s.info, s.round, deferred ? 0 : part_bytes(s.info)});
  }
  auto completion = std::make_shared<Completion>(reply, slices.size() * ((push ? 1 : 0) + (pull ? 1 : 0)));
  if (deferred) {
    completion->defer(std::move(specs));
  } else {
    completion->answer = encode_data_reply(specs);
  }
  size_t started = 0;
  try {
    for (size_t i = 0; i < slices.size(); ++i) {
      const DecodedSlice& s = slices[i];
      if (push) {
        ++started;
        // The store consumes (or copies) the bytes before push returns.
        const std::vector<float> decoded = s.encoding != 0 ? decode_push(codec, s) : std::vector<float>();
        const void* data = s.encoding != 0 ? static_cast<const void*>(decoded.data()) : s.data;
        const size_t bytes = s.encoding != 0 ? decoded.size() * sizeof(float) : s.data_bytes;
        const bool kept = store.push(
            worker, s.info, s.round, data, bytes,
            [completion](const Error* error) {
              if (error) completion->fail(*error);
              completion->finish();
            },
            resent, s.adopt_from, s.numbers);
        // A new copy answers at once while it is filled (the worker must
        // not wait for it: see ServerKeyStore's "New copies"), and says so.
        if (kept && !pull) completion->mark_held();
      }
      if (pull) {
        ++started;
        if (deferred) {
          store.pull(s.info, s.round, [completion, i](const Error* error, const ServerKeyStore::PullAnswer& a) {
            if (error) {
              completion->fail(*error);
            } else {
              try {
                completion->keep(i, a);
              } catch (const std::bad_alloc&) {
                completion->fail(Error(ErrorCode::kOutOfMemory, "server out of memory answering a pull"));
              }
            }
            completion->finish();
          });
          continue;
        }
        uint8_t* dst = completion->answer.slice_data[i];
        const size_t expected = part_bytes(s.info);
        store.pull(s.info, s.round, [completion, dst, expected](const Error* error,
                                                                 const ServerKeyStore::PullAnswer& a) {
          if (error) {
            completion->fail(*error);
          } else if (a.encoding != 0 || a.bytes != expected) {
            // pulls_may_be_encoded() said no: nothing encodes after it does.
            completion->fail(Error(ErrorCode::kInternal, "a pull sized for the part's value was answered encoded"));
          } else {
            std::memcpy(dst, a.data, a.bytes);
          }
          completion->finish();
        });
      }
    }
  } catch (const Error& error) {
    // The piece that threw never started: settle it and everything after it.
    completion->fail(error);
    const size_t total = slices.size() * ((push ? 1 : 0) + (pull ? 1 : 0));
    // started counts the piece that threw; +1 for the handler's own count.
    completion->finish(total - (started - 1) + 1);
    return;
  }
  completion->finish();
}

}  // namespace

ServerRequestHandler::ServerRequestHandler(int num_workers, uint64_t memory_limit_bytes)
    : store_(num_workers, memory_limit_bytes) {}

void ServerRequestHandler::fail(const Error& error) {
  std::map<int, OptimizerCheck> checks;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    checks.swap(optimizer_checks_);
  }
  for (auto& [worker, check] : checks) check.reply(encode_data_error(error.code(), error.what()));
  store_.fail(error);
}

void ServerRequestHandler::connection_closed(uint32_t pipe) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = worker_of_pipe_.find(pipe);
  if (it == worker_of_pipe_.end()) return;
  pipe_of_worker_.erase(it->second);
  worker_of_pipe_.erase(it);
}

void ServerRequestHandler::check_speaker(int worker, uint32_t pipe) {
  if (pipe == 0) return;
  std::lock_guard<std::mutex> lock(mutex_);
  auto by_pipe = worker_of_pipe_.find(pipe);
  if (by_pipe != worker_of_pipe_.end()) {
    if (by_pipe->second == worker) return;
    throw Error(ErrorCode::kProtocol, "a request in the name of worker " + std::to_string(worker) +
                                          " on the connection of worker " + std::to_string(by_pipe->second) +
                                          " (rule: a member speaks only on its own connection)");
  }
  if (pipe_of_worker_.count(worker) != 0) {
    throw Error(ErrorCode::kProtocol, "a request in the name of worker " + std::to_string(worker) +
                                          " on a connection other than the one worker " + std::to_string(worker) +
                                          " uses (rule: a member speaks only on its own connection)");
  }
  pipe_of_worker_[worker] = pipe;
  worker_of_pipe_[pipe] = worker;
}

const compression::GradientCodec* ServerRequestHandler::pushing() {
  std::lock_guard<std::mutex> lock(mutex_);
  pushed_ = true;
  return codec_.get();
}

void ServerRequestHandler::set_compression(int worker, const compression::CompressionConfig& config) {
  std::lock_guard<std::mutex> lock(mutex_);
  const compression::CompressionConfig current = compression_.value_or(compression::CompressionConfig());
  // A worker's trainer names the gradient scale after its program set the spec.
  const auto agreed = compression::CompressionConfig::agree(current, config);
  if (compression_ || pushed_) {
    if (agreed == current) return;
    if (agreed && !pushed_) return adopt_compression(*agreed);
    throw Error(pushed_ ? ErrorCode::kBadState : ErrorCode::kInvalidArgument,
                "worker " + std::to_string(worker) + " set the gradient compression " + config.to_string() +
                    ", the job's is " + current.to_string() +
                    (pushed_ ? " (rule: set before the first push)" : " (rule: every worker sets the same compression)"));
  }
  adopt_compression(config);
}

void ServerRequestHandler::adopt_compression(const compression::CompressionConfig& config) {
  store_.set_compression(config);
  compression_ = config;
  codec_ = config.mode == compression::CompressionMode::kNone ? nullptr
                                                               : std::make_unique<compression::GradientCodec>(config);
}

void ServerRequestHandler::set_optimizer(int worker, const optim::OptimizerConfig& config,
                                         const RequestServer::Reply& reply) {
  const auto differ = [](int w, const optim::OptimizerConfig& mine, const optim::OptimizerConfig& rank0) {
    return encode_data_error(ErrorCode::kInvalidArgument,
                             "worker " + std::to_string(w) + " set the optimizer " + mine.to_json() +
                                 ", worker 0 set " + rank0.to_json() +
                                 " (rule: every worker sets the same optimizer; worker 0's is applied)");
  };
  if (worker != 0) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (optimizer_ && *optimizer_ == config) {
      reply(encode_data_reply({}).message);
      return;
    }
    // Worker 0's may still be on its way (or change the optimizer to this
    // one): answer when it arrives. A newer request from the same worker
    // replaces the older, which is refused.
    auto [it, fresh] = optimizer_checks_.try_emplace(worker, OptimizerCheck{config, reply});
    if (!fresh) {
      it->second.reply(encode_data_error(ErrorCode::kBadState, "superseded by a later SetOptimizer from worker " +
                                                                   std::to_string(worker)));
      it->second = OptimizerCheck{config, reply};
    }
    return;
  }
  store_.set_optimizer(config);
  std::map<int, OptimizerCheck> checks;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    optimizer_ = config;
    checks.swap(optimizer_checks_);
  }
  for (auto& [w, check] : checks) {
    if (check.config == config) {
      check.reply(encode_data_reply({}).message);
    } else {
      log_.print("refused worker " + std::to_string(w) + "'s optimizer: it differs from worker 0's");
      check.reply(differ(w, check.config, config));
    }
  }
  reply(encode_data_reply({}).message);
}

RequestServer::Reply ServerRequestHandler::tracked(int worker, wire::DataOp op, const std::vector<DecodedSlice>& slices,
                                                  const RequestServer::Reply& reply) {
  if (slices.empty()) return reply;
  const DecodedSlice& first = slices.front();
  return resent_.track(ResentRequests::Identity{worker, static_cast<int>(op), first.info.part.key,
                                                first.info.part.begin, first.round},
                       reply);
}

int ServerRequestHandler::server_speaker(const wire::DataRequest& data, uint32_t pipe, const char* what) {
  const int speaker = data.worker_rank();
  if (speaker >= 0) {
    throw Error(ErrorCode::kProtocol, std::string(what) + " in the name of worker " + std::to_string(speaker) +
                                          " (rule: servers ask for it, as -1 - their rank)");
  }
  check_speaker(speaker, pipe);
  return -1 - speaker;
}

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
    if (!is_decimal(rank) || !is_decimal(pid) || std::stoll(rank) >= num_workers || std::stoll(pid) == 0) {
      throw Error(ErrorCode::kProtocol, "the job's settings: joined worker '" + item.substr(0, 40) + "'");
    }
    joined.emplace_back(static_cast<int>(std::stoll(rank)), std::stoll(pid));
  }
  return joined;
}

}  // namespace

std::string ServerRequestHandler::settings() const {
  std::string mode = "none";
  try {
    mode = store_.mode() == ServerKeyStore::Mode::kSync ? "dist_sync" : "dist_async";
  } catch (const Error&) {
    // No init has reached this server yet: no mode.
  }
  std::string text = "mode=" + mode + "\n";
  {
    std::lock_guard<std::mutex> lock(mutex_);
    text += "optimizer=" + (optimizer_ ? optimizer_->to_json() : std::string()) + "\n";
    text += "compression=" + (compression_ ? compression_->to_string() : std::string()) + "\n";
  }
  if (store_.has_optimizer()) {
    text += "learning_rate=" + number_text(store_.learning_rate()) + "\n";
    text += "rescale_grad=" + number_text(store_.rescale_grad()) + "\n";
  }
  // Workers that joined the running job (rank:pid,...): a rejoining server
  // missed their Join requests.
  std::string joined;
  for (const auto& [worker, pid] : store_.joined_workers()) {
    joined += (joined.empty() ? "" : ",") + std::to_string(worker) + ":" + std::to_string(pid);
  }
  if (!joined.empty()) text += "joined=" + joined + "\n";
  return text;
}

void ServerRequestHandler::apply_settings(const std::string& text) {
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
  if (mode != "none") store_.set_mode(mode == "dist_sync" ? ServerKeyStore::Mode::kSync : ServerKeyStore::Mode::kAsync);
  if (!values["compression"].empty()) {
    set_compression(0, compression::CompressionConfig::parse(values["compression"]));
  }
  if (!values["optimizer"].empty()) {
    const optim::OptimizerConfig config = optim::OptimizerConfig::from_json(values["optimizer"]);
    store_.set_optimizer(config);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      optimizer_ = config;
    }
    if (values.count("learning_rate") != 0) store_.set_learning_rate(number_of("learning_rate", values["learning_rate"]));
    if (values.count("rescale_grad") != 0) store_.set_rescale_grad(number_of("rescale_grad", values["rescale_grad"]));
  }
  // As if their Join requests had come here: the news of their
  // predecessors' losses, which this server hears from the scheduler, then
  // passes them by.
  for (const auto& [worker, pid] : joined_workers_of(values["joined"], store_.num_workers())) {
    store_.join(worker, pid, store_.join_floor(worker));
  }
}

void ServerRequestHandler::take_source_optimizer_numbers(double learning_rate, double rescale_grad) {
  if (!store_.has_optimizer()) return;
  bool take_rate = false;
  bool take_rescale = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    take_rate = !learning_rate_set_;
    take_rescale = !rescale_grad_set_;
  }
  if (take_rate) store_.set_learning_rate(learning_rate);
  if (take_rescale) store_.set_rescale_grad(rescale_grad);
}

void ServerRequestHandler::part_state(const Frame& frame, const wire::DataRequest& data, uint32_t pipe,
                                      const RequestServer::Reply& reply) {
  server_speaker(data, pipe, "a part's state");
  // A rejoined server takes the optimizer's numbers with each part (see
  // take_source_optimizer_numbers).
  std::optional<std::pair<double, double>> numbers;
  if (store_.has_optimizer()) numbers.emplace(store_.learning_rate(), store_.rescale_grad());
  const auto slices = decode_all(frame, data, false);
  if (slices.size() != 1) {
    throw Error(ErrorCode::kProtocol, "a part-state request names " + std::to_string(slices.size()) +
                                          " parts (rule: one)");
  }
  const PartInfo info = slices.front().info;
  store_.part_state(info, slices.front().round, [reply, info, numbers](const Error* error,
                                                                       const ServerKeyStore::PartState& state) {
    if (error) {
      reply(encode_data_error(error->code(), error->what()));
      return;
    }
    try {
      // The value; the optimizer's arrays; with compressed pulls, the
      // residual and the round's encoding (named kPullResidual and
      // kPullEncoding, the latter a slice of the part itself, encoded).
      std::vector<SliceSpec> specs{SliceSpec{info, state.round, state.bytes}};
      std::vector<const void*> sources{state.value};
      std::string names;
      const auto add = [&](const std::string& name, SliceSpec spec, const void* data) {
        specs.push_back(std::move(spec));
        sources.push_back(data);
        names += (names.empty() ? "" : "\n") + name;
      };
      for (const auto& [name, array] : state.optimizer) {
        add(name,
            SliceSpec{PartInfo{PartKey{0, 0, static_cast<int64_t>(array.size())}, array.dtype(), array.shape()}, -1,
                      array.nbytes()},
            array.data());
      }
      if (!state.pull_residual.empty()) {
        const auto n = static_cast<int64_t>(state.pull_residual.size());
        add(kPullResidual,
            SliceSpec{PartInfo{PartKey{0, 0, n}, core::DType::kFloat32, core::Shape({n})}, -1, n * sizeof(float)},
            state.pull_residual.data());
      }
      if (state.encoded) {
        SliceSpec spec{info, state.round, state.encoded->size()};
        spec.encoding = state.encoding;
        add(kPullEncoding, spec, state.encoded->data());
      }
      const SliceSpec scalar{PartInfo{PartKey{0, 0, 1}, core::DType::kFloat64, core::Shape({1})}, -1, sizeof(double)};
      if (numbers) {
        add(kSourceLearningRate, scalar, &numbers->first);
        add(kSourceRescaleGrad, scalar, &numbers->second);
      }
      EncodedData answer = encode_data_reply(specs, names, state.round);
      for (size_t i = 0; i < specs.size(); ++i) {
        if (specs[i].data_bytes != 0) std::memcpy(answer.slice_data[i], sources[i], specs[i].data_bytes);
      }
      reply(std::move(answer.message));
    } catch (const std::bad_alloc&) {
      reply(encode_data_error(ErrorCode::kOutOfMemory, "server out of memory answering a part's state"));
    }
  });
}

void ServerRequestHandler::handle(Message request, const RequestServer::Reply& reply) {
  const uint32_t pipe = request.pipe_id();
  try {
    Frame frame = Frame::parse(std::move(request));
    const auto* data = frame.body<wire::DataRequest>();
    if (data == nullptr) {
      throw Error(ErrorCode::kProtocol, std::string("a server takes DataRequest messages, got ") + body_name(frame.type()));
    }
    if (data->op() == wire::DataOp::PartState) {
      part_state(frame, *data, pipe, reply);
      return;
    }
    if (data->op() == wire::DataOp::ServerSettings) {
      // Asked for in a server's name, but not bound to the connection: the
      // asker closes it at once and fills on another, and reading the
      // job's settings gives no say in it.
      if (data->worker_rank() >= 0) {
        throw Error(ErrorCode::kProtocol, "the job's settings in the name of worker " +
                                              std::to_string(data->worker_rank()) +
                                              " (rule: servers ask for them, as -1 - their rank)");
      }
      reply(encode_data_reply({}, settings()).message);
      return;
    }
    const int worker = data->worker_rank();
    if (worker < 0 || worker >= store_.num_workers()) {
      throw Error(ErrorCode::kProtocol, "a data request from worker " + std::to_string(worker) + " of " +
                                            std::to_string(store_.num_workers()));
    }
    check_speaker(worker, pipe);
    if (data->slices() == nullptr || data->slices()->size() == 0) {
      verbose_log(2, std::string("server: ") + wire::EnumNameDataOp(data->op()) + " from worker " +
                         std::to_string(worker));
    }
    const auto only_worker_0 = [&](const char* what) {
      if (worker != 0) {
        throw Error(ErrorCode::kBadState, std::string(what) + " from worker " + std::to_string(worker) +
                                              " (rule: worker 0 owns the servers' optimizer settings)");
      }
    };
    const auto finite_number = [&](const char* what) {
      if (!std::isfinite(data->number())) {
        throw Error(ErrorCode::kInvalidArgument, std::string(what) + " of " + std::to_string(data->number()) +
                                                     " (not a finite number)");
      }
    };
    switch (data->op()) {
      case wire::DataOp::Init: {
        const std::string type = data->text() ? data->text()->str() : "";
        if (type != "dist_sync" && type != "dist_async") {
          throw Error(ErrorCode::kProtocol, "an init request names the kvstore type '" + type + "'");
        }
        store_.set_mode(type == "dist_sync" ? ServerKeyStore::Mode::kSync : ServerKeyStore::Mode::kAsync);
        const auto slices = decode_all(frame, *data, true);
        for (const DecodedSlice& s : slices) store_.init(worker, s.info, s.data, s.data_bytes, data->may_resend());
        reply(encode_data_reply({}).message);
        return;
      }
      case wire::DataOp::Push: {
        const auto slices = decode_all(frame, *data, true);
        push_pull(store_, worker, slices, true, false, pushing(),
                  data->may_resend() ? tracked(worker, data->op(), slices, reply) : reply, data->may_resend());
        return;
      }
      case wire::DataOp::Pull: {
        const auto slices = decode_all(frame, *data, false);
        push_pull(store_, worker, slices, false, true, nullptr,
                  data->may_resend() ? tracked(worker, data->op(), slices, reply) : reply, false);
        return;
      }
      case wire::DataOp::PushPull: {
        const auto slices = decode_all(frame, *data, true);
        push_pull(store_, worker, slices, true, true, pushing(),
                  data->may_resend() ? tracked(worker, data->op(), slices, reply) : reply, data->may_resend());
        return;
      }
      case wire::DataOp::SetOptimizer:
        set_optimizer(worker, optim::OptimizerConfig::from_json(data->text() ? data->text()->str() : ""), reply);
        return;
      case wire::DataOp::SetRescaleGrad:
        only_worker_0("SetRescaleGrad");
        finite_number("SetRescaleGrad");
        store_.set_rescale_grad(data->number());
        {
          std::lock_guard<std::mutex> lock(mutex_);
          rescale_grad_set_ = true;
        }
        reply(encode_data_reply({}).message);
        return;
      case wire::DataOp::SetLearningRate:
        only_worker_0("SetLearningRate");
        finite_number("SetLearningRate");
        store_.set_learning_rate(data->number());
        {
          std::lock_guard<std::mutex> lock(mutex_);
          learning_rate_set_ = true;
        }
        reply(encode_data_reply({}).message);
        return;
      case wire::DataOp::GetOptimizerState: {
        const auto state = store_.optimizer_state();
        std::vector<SliceSpec> specs;
        std::string names;
        for (const auto& [name, array] : state) {
          specs.push_back(SliceSpec{PartInfo{PartKey{0, 0, static_cast<int64_t>(array.size())}, array.dtype(),
                                             array.shape()},
                                    -1, array.nbytes()});
          names += (names.empty() ? "" : "\n") + name;
        }
        EncodedData answer = encode_data_reply(specs, names);
        for (size_t i = 0; i < state.size(); ++i) std::memcpy(answer.slice_data[i], state[i].second.data(), specs[i].data_bytes);
        reply(std::move(answer.message));
        return;
      }
      case wire::DataOp::SetOptimizerState: {
        only_worker_0("SetOptimizerState");
        const auto slices = decode_all(frame, *data, true);
        const std::string text = data->text() ? data->text()->str() : "";
        core::NamedArrays arrays;
        size_t start = 0;
        for (const DecodedSlice& s : slices) {
          if (start > text.size()) throw Error(ErrorCode::kProtocol, "optimizer state: fewer names than arrays");
          const size_t end = std::min(text.find('\n', start), text.size());
          // Sized from the bytes that came, not from the shape claimed.
          // (decode_slice checked data_bytes against the part's range.)
          if (s.info.part.begin != 0 || s.info.part.end != s.info.shape.numel()) {
            throw Error(ErrorCode::kProtocol, "optimizer state: an array of " + s.info.shape.to_string() +
                                                  " carries " + std::to_string(s.data_bytes) + " bytes");
          }
          core::NDArray array = core::NDArray::empty(core::make_cpu_context(), s.info.dtype, s.info.shape);
          if (s.data_bytes != array.nbytes()) {
            throw Error(ErrorCode::kProtocol, "optimizer state: an array of " + s.info.shape.to_string() +
                                                  " carries " + std::to_string(s.data_bytes) + " bytes");
          }
          array.copy_from_host(s.data, s.data_bytes);
          arrays.emplace_back(text.substr(start, end - start), array);
          start = end + 1;
        }
        if (start <= text.size() && !slices.empty()) {
          throw Error(ErrorCode::kProtocol, "optimizer state: more names than arrays");
        }
        store_.load_optimizer_state(arrays);
        reply(encode_data_reply({}).message);
        return;
      }
      case wire::DataOp::Join: {
        if (data->number() < 0) {
          reply(encode_data_reply({}, {}, store_.join_floor(worker)).message);
          return;
        }
        const std::string pid = data->text() ? data->text()->str() : "";
        // A pid of 0 would pass for the worker that started with the job.
        if (!std::isfinite(data->number()) || data->number() > 1e15 || !is_decimal(pid) || std::stoll(pid) == 0) {
          throw Error(ErrorCode::kProtocol, "a join request needs a round and the worker's pid, got " +
                                                std::to_string(data->number()) + " and '" + pid + "'");
        }
        store_.join(worker, std::stoll(pid), static_cast<int64_t>(data->number()));
        bool sync = false;  // no mode yet: no init reached this server, no rounds either
        try {
          sync = store_.mode() == ServerKeyStore::Mode::kSync;
        } catch (const Error&) {
        }
        if (sync) {
          std::fprintf(stderr, "disttrain server: worker %d (pid %s) joined the running job; its pushes count from "
                       "round %lld\n", worker, pid.c_str(), static_cast<long long>(data->number()));
        } else {
          std::fprintf(stderr, "disttrain server: worker %d (pid %s) joined the running job\n", worker, pid.c_str());
        }
        reply(encode_data_reply({}).message);
        return;
      }
      case wire::DataOp::PartState:
      case wire::DataOp::ServerSettings:
        break;  // a server's request, handled above
      case wire::DataOp::SetGradientCompression:
        set_compression(worker, compression::CompressionConfig::parse(data->text() ? data->text()->str() : ""));
        reply(encode_data_reply({}).message);
        return;
    }
    throw Error(ErrorCode::kProtocol, "unknown data op " + std::to_string(static_cast<int>(data->op())));
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

}  // namespace dt::ps
