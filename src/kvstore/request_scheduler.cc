#include "kvstore/request_scheduler.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <string>

#include "ps/server/server_process.h"
#include "ps/transport/data_codec.h"

namespace dt::kvstore {

using core::Error;
using core::ErrorCode;
using ps::wire::DataOp;

namespace {

// The push half of a part (nothing pulled into) and its pull half (nothing
// pushed, so no optimizer numbers either).
RequestScheduler::Part push_half(RequestScheduler::Part part) {
  part.dst = nullptr;
  return part;
}

RequestScheduler::Part pull_half(RequestScheduler::Part part) {
  part.src = nullptr;
  part.numbers = {};
  return part;
}

// A replicated part none of whose holders is left: the job cannot serve it.
Error every_holder_lost(const RequestScheduler::Part& part) {
  return Error(ErrorCode::kPeerLost, "every server holding key " + std::to_string(part.key) + " elements [" +
                                         std::to_string(part.range.begin) + ", " + std::to_string(part.range.end) +
                                         ") was lost");
}

// Tensor bytes per message: big enough to amortise the per-message cost,
// small enough that parts pipeline and no buffer hits glibc's mmap path.
constexpr size_t kBatchBytes = ps::KeyPlacement::kDefaultPartBytes;
// Requests up to this size are encoded and sent by the submitting thread.
constexpr size_t kSendHereBytes = size_t{1} << 20;
// How often the communication thread looks for a lost peer, which nobody
// signals to it.
constexpr auto kFailurePoll = std::chrono::milliseconds(20);

size_t bytes_of(const RequestScheduler::Part& part) {
  return static_cast<size_t>(part.range.end - part.range.begin) * core::dtype_size(part.dtype);
}

class WorkerClientLink final : public RequestScheduler::Link {
 public:
  explicit WorkerClientLink(ps::WorkerClient& client) : client_(client) {}
  int num_servers() const override { return client_.num_servers(); }
  void send(int server, ps::Message request, ps::WorkerClient::Done done, bool may_resend) override {
    client_.send(server, std::move(request), std::move(done), may_resend);
  }
  bool resends() const override { return client_.resends(); }
  std::optional<Error> failure() const override { return client_.failure(); }
  void fail(const Error& error) override { client_.fail(error); }
  void drop_server(int server) override { client_.drop_server(server); }
  void reconnect_server(const ps::NodeInfo& server) override { client_.reconnect_server(server); }

 private:
  ps::WorkerClient& client_;
};

int checked_window(int max_in_flight_per_server) {
  // The servers accept both lanes' windows from one connection (kRequestsPerWorker).
  if (max_in_flight_per_server < 0 || max_in_flight_per_server > ps::kLaneWindow) {
    throw Error(ErrorCode::kInvalidArgument, "max_in_flight_per_server must be 0 (automatic) to " +
                                                 std::to_string(ps::kLaneWindow));
  }
  return max_in_flight_per_server > 0 ? max_in_flight_per_server : ps::kLaneWindow;
}

bool checked_replication(bool replicated, bool sync, int num_servers) {
  if (!replicated) return false;
  // dist_async servers apply pushes in arrival order, which differs between
  // two servers: their copies would drift apart.
  if (!sync) {
    throw Error(ErrorCode::kInvalidArgument,
                "DT_SERVER_REPLICATION=1 needs dist_sync: a dist_async server applies pushes as they arrive, so a "
                "replica would not hold the same values");
  }
  if (num_servers < 2) {
    throw Error(ErrorCode::kInvalidArgument, "DT_SERVER_REPLICATION=1 needs 2 or more servers, the job has " +
                                                 std::to_string(num_servers));
  }
  return true;
}

// Whether a failed message may mean its server died, which the scheduler
// confirms or not within its heartbeat timeout: the connection dropped, or
// the server answered that it is leaving the job (kPeerLost: one that
// stalled past the heartbeat timeout learns on waking that the job went on
// without it, and fails what it still holds).
bool may_be_a_lost_server(const Error& error) {
  return error.code() == ErrorCode::kNetwork || error.code() == ErrorCode::kTimedOut ||
         error.code() == ErrorCode::kClosed || error.code() == ErrorCode::kPeerLost;
}

}  // namespace

std::unique_ptr<RequestScheduler::Link> RequestScheduler::link_to(ps::WorkerClient& client) {
  return std::make_unique<WorkerClientLink>(client);
}

// Everything one submitted request is waiting for.
struct RequestScheduler::Request {
  std::shared_ptr<Completion> completion = std::make_shared<Completion>();
  size_t units = 0;                  // queued units (a split pushpull part is two)
  std::atomic<size_t> remaining{0};  // units not yet answered
  std::function<void()> on_success;
  std::mutex mutex;
  std::optional<Error> error;  // the first failure among its units
};

RequestScheduler::RequestScheduler(std::unique_ptr<Link> link, int worker_rank, bool sync,
                                   int max_in_flight_per_server, bool replicated,
                                   std::chrono::milliseconds verdict_wait)
    : link_(std::move(link)),
      worker_rank_(worker_rank),
      sync_(sync),
      window_(checked_window(max_in_flight_per_server)),
      replicated_(checked_replication(replicated, sync, link_->num_servers())),
      verdict_wait_(verdict_wait),
      lanes_(2 * static_cast<size_t>(link_->num_servers())),
      lost_servers_(static_cast<size_t>(link_->num_servers()), false),
      parked_(static_cast<size_t>(link_->num_servers())),
      last_progress_(std::chrono::steady_clock::now()) {
  thread_ = std::thread([this] { communicate(); });
}

RequestScheduler::~RequestScheduler() { close(); }

void RequestScheduler::close() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  const Error closed(ErrorCode::kClosed, "the kvstore was freed before the request was sent");
  std::vector<std::shared_ptr<Request>> dropped;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    dropped = drop_queued();
  }
  for (const auto& request : dropped) finish_unit(request, closed);
}

std::vector<std::shared_ptr<RequestScheduler::Request>> RequestScheduler::drop_queued() {
  std::vector<std::shared_ptr<Request>> dropped;
  for (Lane& lane : lanes_) {
    for (auto& [order, unit] : lane.queued) dropped.push_back(unit.request);
    lane.queued.clear();
  }
  for (std::vector<Parked>& parked : parked_) {
    for (const Parked& p : parked) dropped.push_back(p.unit.request);
    parked.clear();
  }
  return dropped;
}

RequestScheduler::Ended RequestScheduler::take_expired_locked() {
  Ended expired;
  const auto now = std::chrono::steady_clock::now();
  for (std::vector<Parked>& parked : parked_) {
    auto waiting = std::partition(parked.begin(), parked.end(), [&](const Parked& p) { return now - p.since < verdict_wait_; });
    for (auto it = waiting; it != parked.end(); ++it) expired.emplace_back(it->unit.request, it->error);
    parked.erase(waiting, parked.end());
  }
  return expired;
}

void RequestScheduler::abandon(const Error& error) {
  link_->fail(error);
  {
    std::unique_lock<std::shared_mutex> memory(memory_mutex_);
    memory_released_ = true;
  }
  wake_.notify_all();
}

std::chrono::steady_clock::time_point RequestScheduler::last_progress() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return last_progress_;
}

std::vector<std::shared_ptr<Completion>> RequestScheduler::take_outstanding() {
  std::vector<std::shared_ptr<Completion>> requests;
  std::lock_guard<std::mutex> lock(mutex_);
  requests.swap(outstanding_);
  return requests;
}

std::shared_ptr<Completion> RequestScheduler::take_unreported() {
  std::shared_ptr<Completion> failed;
  std::lock_guard<std::mutex> lock(mutex_);
  failed.swap(unreported_);
  return failed;
}

void RequestScheduler::reported(const std::shared_ptr<Completion>& request) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (unreported_ == request) unreported_.reset();
}

// ---- the communication thread ---------------------------------------------

void RequestScheduler::communicate() {
  std::unique_lock<std::mutex> lock(mutex_);
  size_t first = 0;  // rotates, so no server is always served last
  while (!stop_) {
    if (!to_drop_.empty()) {
      // Closing a connection waits for its transport's callbacks, which
      // take mutex_.
      std::vector<int> servers;
      servers.swap(to_drop_);
      dropping_ = true;
      lock.unlock();
      for (int server : servers) link_->drop_server(server);
      lock.lock();
      dropping_ = false;
      dropped_.notify_all();
    }
    if (auto failure = link_->failure()) {
      // A lost peer: nothing queued will ever be answered.
      std::vector<std::shared_ptr<Request>> dropped = drop_queued();
      lock.unlock();
      for (const auto& request : dropped) finish_unit(request, failure);
      lock.lock();
    }
    if (replicated_) {
      // A connection that dropped without its server being declared lost:
      // the error was the request's after all.
      const Ended expired = take_expired_locked();
      if (!expired.empty()) {
        lock.unlock();
        for (const auto& [request, error] : expired) finish_unit(request, error);
        lock.lock();
      }
    }
    std::vector<std::pair<int, std::vector<Unit>>> batches;  // (lane, units)
    for (size_t i = 0; i < lanes_.size(); ++i) {
      const size_t l = (first + i) % lanes_.size();
      Lane& lane = lanes_[l];
      while (lane.in_flight < window_ && !lane.queued.empty()) {
        batches.emplace_back(static_cast<int>(l), take_batch(lane));
        ++lane.in_flight;
      }
    }
    first = (first + 1) % std::max<size_t>(1, lanes_.size());
    if (batches.empty()) {
      // Woken by new requests and replies; the timeout only rechecks for a
      // lost peer.
      wake_.wait_for(lock, kFailurePoll);
      continue;
    }
    lock.unlock();
    for (auto& [lane, units] : batches) send_batch(lane, std::move(units));
    lock.lock();
  }
}

std::vector<RequestScheduler::Unit> RequestScheduler::take_batch(Lane& lane) {
  // The most urgent unit, then the next ones of the same op in priority
  // order while they fit: small keys share a message.
  std::vector<Unit> units;
  size_t bytes = 0;
  const DataOp op = lane.queued.begin()->second.op;
  for (auto it = lane.queued.begin(); it != lane.queued.end();) {
    const size_t size = bytes_of(it->second.part);
    if (it->second.op != op || (!units.empty() && bytes + size > kBatchBytes)) {
      ++it;
      continue;
    }
    bytes += size;
    units.push_back(std::move(it->second));
    it = lane.queued.erase(it);
    if (bytes >= kBatchBytes) break;
  }
  return units;
}

std::vector<uint8_t> RequestScheduler::compress(const Part& part, const ps::compression::GradientCodec& codec,
                                                ps::compression::ErrorFeedback* feedback) {
  const size_t n = static_cast<size_t>(part.range.end - part.range.begin);
  std::vector<float> values(n);
  std::memcpy(values.data(), part.src + static_cast<size_t>(part.range.begin) * sizeof(float), n * sizeof(float));
  std::vector<uint8_t> bytes;
  ps::compression::encode_with_feedback(codec, feedback, part.key, part.range.begin, values.data(), n, bytes);
  return bytes;
}

void RequestScheduler::decompress(const ps::DecodedSlice& slice, const ps::compression::GradientCodec* codec,
                                  float* dst) {
  if (codec == nullptr || static_cast<uint8_t>(codec->config().mode) != slice.encoding) {
    throw Error(ErrorCode::kProtocol, "a server answered a pull of key " + std::to_string(slice.info.part.key) +
                                          " encoded with mode " + std::to_string(slice.encoding) +
                                          ", but this store compresses with " +
                                          (codec ? codec->config().to_string() : std::string("none")));
  }
  const size_t n = static_cast<size_t>(slice.info.part.end - slice.info.part.begin);
  // Checked before anything is written: dst is the caller's (or aliases it).
  std::vector<float> values(n, 0.0f);
  codec->decode_add(slice.data, slice.data_bytes, values.data(), n);
  std::memcpy(dst, values.data(), n * sizeof(float));
}

void RequestScheduler::set_compression(const ps::compression::CompressionConfig& config) {
  config.validate();
  std::lock_guard<std::mutex> lock(mutex_);
  if (config.mode == ps::compression::CompressionMode::kNone) {
    codec_.reset();
    feedback_.reset();
    return;
  }
  codec_ = std::make_shared<const ps::compression::GradientCodec>(config);
  feedback_ = config.error_feedback ? std::make_shared<ps::compression::ErrorFeedback>() : nullptr;
}

void RequestScheduler::send_batch(int lane, std::vector<Unit> units) {
  const int server = lane / 2;
  const DataOp op = units.front().op;
  std::shared_ptr<const ps::compression::GradientCodec> codec;
  std::shared_ptr<ps::compression::ErrorFeedback> feedback;
  if (op == DataOp::Push || op == DataOp::PushPull) {
    std::lock_guard<std::mutex> lock(mutex_);
    codec = codec_;
    feedback = feedback_;
  }
  if (replicated_) {
    // Taken from the lane before a loss of its server that came (and a
    // rejoin, maybe) while they waited to leave: theirs, not the rejoined
    // server's.
    Ended ended;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      std::vector<Unit> stale;
      for (auto it = units.begin(); it != units.end();) {
        if (it->epoch >= 0 && it->epoch < times_lost_locked(server)) {
          stale.push_back(std::move(*it));
          it = units.erase(it);
        } else {
          ++it;
        }
      }
      if (!stale.empty()) {
        // A message with nothing left to send frees its place in the lane.
        if (units.empty()) --lanes_[static_cast<size_t>(lane)].in_flight;
        redirect_locked(std::move(stale), ended);
      }
    }
    if (!ended.empty() || units.empty()) wake_.notify_all();
    for (const auto& [request, e] : ended) finish_unit(request, e);
    if (units.empty()) return;
  }
  std::optional<ps::EncodedData> encoded;
  bool may_resend = false;
  std::optional<Error> error;
  try {
    std::shared_lock<std::shared_mutex> memory(memory_mutex_);
    if (memory_released_) throw Error(ErrorCode::kClosed, "the request was abandoned before it was sent");
    std::vector<ps::SliceSpec> specs;
    specs.reserve(units.size());
    // Compressed parts' bytes, encoded first: their sizes go into the
    // message; likewise replicated parts' bytes, taken once for both copies.
    std::vector<std::vector<uint8_t>> compressed(units.size());
    std::vector<const std::vector<uint8_t>*> encodings(units.size(), nullptr);
    for (size_t j = 0; j < units.size(); ++j) {
      const Part& part = units[j].part;
      ps::PartInfo info{ps::PartKey{part.key, part.range.begin, part.range.end}, part.dtype, *part.shape};
      ps::SliceSpec spec{info, part.round, part.src ? ps::part_bytes(info) : 0};
      spec.adopt_from = units[j].adopt_from;
      if (units[j].op == DataOp::Push || units[j].op == DataOp::PushPull) spec.numbers = part.numbers;
      const bool compresses = codec && part.src && part.dtype == core::DType::kFloat32;
      SharedEncoding* shared = part.src ? units[j].encoding.get() : nullptr;
      if (shared) {
        std::call_once(shared->once, [&] {
          if (compresses) {
            shared->bytes = compress(part, *codec, feedback.get());
            shared->encoding = static_cast<uint8_t>(codec->config().mode);
          } else {
            const uint8_t* begin = part.src + static_cast<size_t>(part.range.begin) * core::dtype_size(part.dtype);
            shared->bytes.assign(begin, begin + spec.data_bytes);
          }
        });
        encodings[j] = &shared->bytes;
        spec.data_bytes = shared->bytes.size();
        spec.encoding = shared->encoding;
      } else if (compresses) {
        compressed[j] = compress(part, *codec, feedback.get());
        encodings[j] = &compressed[j];
        spec.data_bytes = compressed[j].size();
        spec.encoding = static_cast<uint8_t>(codec->config().mode);
      }
      specs.push_back(std::move(spec));
    }
    // A repeat is recognised by worker, key and round: pulls and inits
    // always, pushes in dist_sync only (an async push has no round).
    may_resend = link_->resends() && (op == DataOp::Pull || op == DataOp::Init || sync_);
    // Servers know the two modes; a "_device" type differs only on the worker.
    encoded.emplace(ps::encode_data_request(op, worker_rank_, specs,
                                            op == DataOp::Init ? (sync_ ? "dist_sync" : "dist_async") : std::string(),
                                            0, may_resend));
    for (size_t j = 0; j < units.size(); ++j) {
      const Part& part = units[j].part;
      if (part.src == nullptr || specs[j].data_bytes == 0) continue;
      const uint8_t* from = encodings[j] != nullptr
                                ? encodings[j]->data()
                                : part.src + static_cast<size_t>(part.range.begin) * core::dtype_size(part.dtype);
      std::memcpy(encoded->slice_data[j], from, specs[j].data_bytes);
    }
  } catch (const Error& e) {
    error = e;
  } catch (const std::bad_alloc&) {
    error = Error(ErrorCode::kOutOfMemory, "out of memory encoding a request");
  }
  auto shared = std::make_shared<std::vector<Unit>>(std::move(units));
  if (error) {
    on_reply(lane, *shared, error, nullptr);
    return;
  }
  link_->send(
      server, std::move(encoded->message),
      [this, lane, shared](std::optional<Error> e, const ps::Frame* reply) {
        on_reply(lane, *shared, std::move(e), reply);
      },
      may_resend);
}

void RequestScheduler::on_reply(int lane, const std::vector<Unit>& units, std::optional<Error> error,
                                const ps::Frame* reply) {
  const DataOp op = units.front().op;
  if (!error && (op == DataOp::Pull || op == DataOp::PushPull)) {
    try {
      const auto* slices = reply->expect<ps::wire::DataReply>().slices();
      if (slices == nullptr || slices->size() != units.size()) {
        throw Error(ErrorCode::kProtocol, "a server answered " + std::to_string(slices ? slices->size() : 0) +
                                              " slices to a pull of " + std::to_string(units.size()));
      }
      std::shared_ptr<const ps::compression::GradientCodec> codec;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        codec = codec_;
      }
      std::shared_lock<std::shared_mutex> memory(memory_mutex_);
      if (memory_released_) throw Error(ErrorCode::kClosed, "the request was abandoned");
      for (size_t j = 0; j < units.size(); ++j) {
        const Part& part = units[j].part;
        const ps::DecodedSlice s = ps::decode_slice(*reply, slices->Get(static_cast<flatbuffers::uoffset_t>(j)));
        if (s.info.part.key != part.key || s.info.part.begin != part.range.begin ||
            s.info.part.end != part.range.end || s.info.dtype != part.dtype ||
            (s.data == nullptr && s.encoding == 0)) {
          throw Error(ErrorCode::kProtocol, "a server answered a pull of key " + std::to_string(part.key) +
                                                " with another part");
        }
        uint8_t* dst = part.dst + static_cast<size_t>(part.range.begin) * core::dtype_size(part.dtype);
        if (s.encoding != 0) {
          decompress(s, codec.get(), reinterpret_cast<float*>(dst));
        } else {
          std::memcpy(dst, s.data, s.data_bytes);
        }
      }
    } catch (const Error& e) {
      error = e;
    }
  }
  bool waiting;  // whether the lane has queued messages the freed slot lets go
  bool rerouted = false;  // replicated: the units are not this reply's to finish
  Ended ended;
  std::optional<uint32_t> restored;  // every new copy after this many changes is filled
  // A push answered at new copies still being filled (DataReply.held) is
  // delivered, but fills nothing yet. (The link verified the reply.)
  const auto* data = !error && reply != nullptr ? reply->body<ps::wire::DataReply>() : nullptr;
  const bool held = data != nullptr && data->held();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    Lane& l = lanes_[static_cast<size_t>(lane)];
    --l.in_flight;
    waiting = !l.queued.empty();
    last_progress_ = std::chrono::steady_clock::now();
    if (error && replicated_) rerouted = reroute_locked(lane / 2, units, *error, ended);
    if (!error && replicated_ && !held) restored = note_filled_locked(lane / 2, units);
  }
  if (restored && report_restored_) report_restored_(*restored);
  if (waiting || rerouted) wake_.notify_all();
  if (rerouted) {
    for (const auto& [request, e] : ended) finish_unit(request, e);
    return;
  }
  for (const Unit& unit : units) finish_unit(unit.request, error);
}

bool RequestScheduler::reroute_locked(int server, const std::vector<Unit>& units, const Error& error, Ended& ended) {
  // Lost now, or since the units left (a server that rejoined since is
  // another process: they were cut by its predecessor's loss).
  const bool cut_by_a_loss = std::any_of(units.begin(), units.end(), [&](const Unit& unit) {
    return unit.epoch >= 0 && unit.epoch < times_lost_locked(server);
  });
  if (lost_servers_[static_cast<size_t>(server)] || cut_by_a_loss) {
    redirect_locked(units, ended);
    return true;
  }
  // A dropped connection is usually a dead server: wait for the verdict
  // rather than fail a request its replica would have served. Nothing is
  // parked once the store closes or the job failed: no verdict comes then.
  if (stop_ || !may_be_a_lost_server(error) || link_->failure()) return false;
  const auto now = std::chrono::steady_clock::now();
  for (const Unit& unit : units) parked_[static_cast<size_t>(server)].push_back(Parked{unit, error, now});
  if (ask_for_news_) ask_for_news_();
  return true;
}

std::optional<int> RequestScheduler::pull_server_locked(int primary) const {
  const std::vector<ps::PartHolder> holders = holders_locked(primary);
  if (holders.empty()) return std::nullopt;
  return holders.front().server;
}

std::vector<ps::PartHolder> RequestScheduler::holders_locked(int home) const {
  return ps::part_holders(home, static_cast<int>(lost_servers_.size()), changes_);
}

void RequestScheduler::redirect_locked(std::vector<Unit> units, Ended& ended) {
  for (Unit& unit : units) {
    // The other copy of a push (or of a fused pushpull's push) carries it,
    // as long as the server it went to is still there.
    const bool copy_kept = unit.peer >= 0 && !lost_servers_[static_cast<size_t>(unit.peer)];
    if (unit.op == DataOp::Push || unit.op == DataOp::Init) {
      if (copy_kept) {
        ended.emplace_back(unit.request, std::nullopt);
      } else {
        ended.emplace_back(unit.request, every_holder_lost(unit.part));
      }
      continue;
    }
    if (unit.op == DataOp::PushPull) {
      if (!copy_kept) {
        ended.emplace_back(unit.request, every_holder_lost(unit.part));
        continue;
      }
      // Fused: its push's copy went to the other server already; what is
      // left is the pull.
      unit.op = DataOp::Pull;
      unit.part.src = nullptr;
      unit.encoding.reset();
      unit.peer = -1;
    }
    const std::optional<int> other = pull_server_locked(unit.part.range.server);
    if (!other) {
      ended.emplace_back(unit.request, every_holder_lost(unit.part));
      continue;
    }
    const int64_t order = -static_cast<int64_t>(unit.priority);
    unit.epoch = times_lost_locked(*other);
    lanes_[2 * static_cast<size_t>(*other) + 1].queued.emplace(std::make_pair(order, next_sequence_++),
                                                               std::move(unit));
  }
}

std::optional<uint32_t> RequestScheduler::note_filled_locked(int server, const std::vector<Unit>& units) {
  if (awaiting_.empty()) return std::nullopt;
  for (const Unit& unit : units) {
    if (unit.adopt_from < 0) continue;
    // A new copy answers a push only once it holds the part.
    filled_.insert({unit.part.key, unit.part.range.begin, server});
    auto it = awaiting_.find({unit.part.key, unit.part.range.begin});
    if (it != awaiting_.end() && it->second == server) awaiting_.erase(it);
  }
  if (!awaiting_.empty()) return std::nullopt;
  return static_cast<uint32_t>(changes_.size());
}

std::optional<uint32_t> RequestScheduler::await_new_copies_locked() {
  awaiting_.clear();
  for (const auto& [id, range] : initialised_) {
    const std::vector<ps::PartHolder> holders = holders_locked(range.server);
    if (holders.size() < 2 || holders[1].original) continue;
    if (filled_.count({id.first, id.second, holders[1].server}) != 0) continue;
    awaiting_[id] = holders[1].server;
  }
  if (!awaiting_.empty()) return std::nullopt;
  return static_cast<uint32_t>(changes_.size());
}

void RequestScheduler::on_copies_restored(std::function<void(uint32_t changes)> report) {
  report_restored_ = std::move(report);
}

void RequestScheduler::server_lost(int server) {
  Ended ended;
  std::optional<uint32_t> restored;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!replicated_ || stop_ || server < 0 || server >= static_cast<int>(lost_servers_.size()) ||
        lost_servers_[static_cast<size_t>(server)]) {
      return;
    }
    lost_servers_[static_cast<size_t>(server)] = true;
    changes_.push_back(ps::ServerChange{server, false});
    // A server that rejoins later starts empty: its copies count again only
    // once filled again.
    for (auto it = filled_.begin(); it != filled_.end();) {
      it = std::get<2>(*it) == server ? filled_.erase(it) : std::next(it);
    }
    std::vector<Unit> units;
    for (Parked& p : parked_[static_cast<size_t>(server)]) units.push_back(std::move(p.unit));
    parked_[static_cast<size_t>(server)].clear();
    for (size_t lane : {2 * static_cast<size_t>(server), 2 * static_cast<size_t>(server) + 1}) {
      for (auto& [order, unit] : lanes_[lane].queued) units.push_back(std::move(unit));
      lanes_[lane].queued.clear();
    }
    redirect_locked(std::move(units), ended);
    to_drop_.push_back(server);
    last_progress_ = std::chrono::steady_clock::now();
    restored = await_new_copies_locked();
  }
  wake_.notify_all();
  if (restored && report_restored_) report_restored_(*restored);
  for (const auto& [request, error] : ended) finish_unit(request, error);
}

void RequestScheduler::server_rejoined(const ps::NodeInfo& node) {
  const int server = node.rank;
  bool drop_first = false;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!replicated_ || stop_ || server < 0 || server >= static_cast<int>(lost_servers_.size()) ||
        !lost_servers_[static_cast<size_t>(server)]) {
      return;
    }
    // Its predecessor's connection is dropped before the new one is made,
    // never after: here, if the communication thread has not come to it,
    // else once it has.
    const auto pending = std::find(to_drop_.begin(), to_drop_.end(), server);
    if (pending != to_drop_.end()) {
      to_drop_.erase(pending);
      drop_first = true;
    }
    dropped_.wait(lock, [&] { return !dropping_; });
  }
  try {
    if (drop_first) link_->drop_server(server);
    link_->reconnect_server(node);
  } catch (const Error& e) {
    link_->fail(Error(e.code(), "cannot reach rejoined " + node.describe() + ": " + e.what()));
    wake_.notify_all();
    return;
  }
  std::optional<uint32_t> restored;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    lost_servers_[static_cast<size_t>(server)] = false;
    changes_.push_back(ps::ServerChange{server, true});
    last_progress_ = std::chrono::steady_clock::now();
    restored = await_new_copies_locked();
  }
  wake_.notify_all();
  if (restored && report_restored_) report_restored_(*restored);
}

std::vector<int> RequestScheduler::holders(int server) const {
  if (!replicated_) return {server};
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<int> servers;
  for (const ps::PartHolder& holder : holders_locked(server)) servers.push_back(holder.server);
  return servers;
}

int RequestScheduler::times_lost(int server) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return times_lost_locked(server);
}

int RequestScheduler::times_lost_locked(int server) const {
  return static_cast<int>(std::count(changes_.begin(), changes_.end(), ps::ServerChange{server, false}));
}

bool RequestScheduler::server_alive(int server) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return !lost_servers_.at(static_cast<size_t>(server));
}

void RequestScheduler::finish_unit(const std::shared_ptr<Request>& request, const std::optional<Error>& error) {
  if (error) {
    std::lock_guard<std::mutex> lock(request->mutex);
    if (!request->error) request->error = error;
  }
  if (request->remaining.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  std::optional<Error> outcome;
  {
    std::lock_guard<std::mutex> lock(request->mutex);
    outcome = request->error;
  }
  if (!outcome) {
    try {
      std::shared_lock<std::shared_mutex> memory(memory_mutex_);
      if (memory_released_) throw Error(ErrorCode::kClosed, "the request was abandoned");
      if (request->on_success) request->on_success();
    } catch (const Error& e) {
      outcome = e;
    }
  }
  request->on_success = nullptr;
  if (outcome) {
    // Before the completion finishes: a waiter that sees the error also
    // finds it here, and reported() takes it back.
    std::lock_guard<std::mutex> lock(mutex_);
    if (!unreported_) unreported_ = request->completion;
  }
  request->completion->finish(outcome);
}

// ---- submitting ---------------------------------------------------------------

std::shared_ptr<Completion> RequestScheduler::submit(const Work& work, int priority,
                                                     std::function<void()> on_success) {
  auto request = std::make_shared<Request>();
  request->on_success = std::move(on_success);
  std::vector<std::pair<int, std::vector<Unit>>> batches;  // (lane, units) this thread sends
  bool wake = false;                                       // whether the communication thread sends
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // A dist_sync pushpull's pull waits on the server for the other
    // workers' pushes, and in one message its push would wait with it: two
    // workers whose windows fill with such messages, each waiting for keys
    // the other still has queued, would wait for each other forever. So per
    // server it leaves as one message only when that message is sent right
    // now, here, and nothing is queued for the server (the latency case: a
    // small synchronous call, or a step's first small request); otherwise as a push
    // and a pull of the same round, the push in the lane that never waits.
    // A fused message is in flight from the start, so its push reaches the
    // server like any other; only queued messages can be kept waiting.
    size_t request_bytes = 0;
    for (const auto& [op, part] : work) request_bytes += bytes_of(part);
    // A small request leaves from this thread (see below); a big one from
    // the communication thread.
    const bool send_here = request_bytes <= kSendHereBytes;
    auto fuse = [&](size_t server) {
      const Lane& pushes = lanes_[2 * server];
      const Lane& pulls = lanes_[2 * server + 1];
      return send_here && pushes.queued.empty() && pulls.queued.empty() && pulls.in_flight < window_;
    };
    std::vector<int> fused(lanes_.size() / 2, -1);  // per server: unknown, no, yes
    std::vector<bool> touched(lanes_.size(), false);
    auto place_on = [&](int server, DataOp op, const Part& part, bool waits,
                        std::shared_ptr<SharedEncoding> encoding, int adopt_from = -1, int peer = -1) {
      // Pulls that wait for a round have their own lane: they never keep
      // the pushes that complete rounds from leaving.
      const size_t lane = 2 * static_cast<size_t>(server) + (waits ? 1 : 0);
      lanes_.at(lane).queued.emplace(std::make_pair(-static_cast<int64_t>(priority), next_sequence_++),
                                     Unit{request, op, part, std::move(encoding), priority, adopt_from, peer,
                                          replicated_ ? times_lost_locked(server) : -1});
      touched[lane] = true;
      ++request->units;
    };
    auto place = [&](DataOp op, const Part& part, bool waits) {
      place_on(part.range.server, op, part, waits, nullptr);
    };
    // Replicated: a push to both of the part's holders (ps::part_holders:
    // its server and its replica, or after a loss the holder left and the
    // new copy, whose pushes say where it is filled from); a pull to the
    // first. A pushpull to the first may leave fused (as above), its push to
    // the second apart. Inits go to the holders the part had from the
    // start: a new copy takes the job's value from the holder it copies.
    auto place_replicated = [&](DataOp op, const Part& part) {
      const int home = part.range.server;
      if (op == DataOp::Init) initialised_[{part.key, part.range.begin}] = part.range;
      const std::vector<ps::PartHolder> holders = holders_locked(home);
      if (holders.empty()) {
        std::lock_guard<std::mutex> lock(request->mutex);
        request->error = every_holder_lost(part);
        return;
      }
      const int first = holders.front().server;
      const int second = holders.size() > 1 ? holders[1].server : -1;
      const int adopt_from = second >= 0 && !holders[1].original ? first : -1;
      auto encoding = part.src && op != DataOp::Pull ? std::make_shared<SharedEncoding>() : nullptr;
      const Part pushed = push_half(part);
      if (op == DataOp::Init) {
        std::vector<int> original;
        for (const ps::PartHolder& holder : holders) {
          if (holder.original) original.push_back(holder.server);
        }
        for (size_t i = 0; i < original.size(); ++i) {
          place_on(original[i], DataOp::Init, pushed, false, encoding, -1, original.size() > 1 ? original[1 - i] : -1);
        }
        return;
      }
      const auto f = static_cast<size_t>(first);
      if (op == DataOp::PushPull) {
        if (fused[f] < 0) fused[f] = fuse(f) ? 1 : 0;
        if (fused[f] == 1) {
          place_on(first, op, part, true, encoding, -1, second);
          if (second >= 0) place_on(second, DataOp::Push, pushed, false, encoding, adopt_from, first);
          return;
        }
      }
      if (op != DataOp::Pull) {
        place_on(first, DataOp::Push, pushed, false, encoding, -1, second);
        if (second >= 0) place_on(second, DataOp::Push, pushed, false, encoding, adopt_from, first);
      }
      if (op == DataOp::Pull || op == DataOp::PushPull) {
        place_on(first, DataOp::Pull, pull_half(part), true, nullptr);
      }
    };
    for (const auto& [op, part] : work) {
      const size_t server = static_cast<size_t>(part.range.server);
      if (replicated_) {
        place_replicated(op, part);
      } else if (sync_ && op == DataOp::PushPull) {
        if (fused[server] < 0) fused[server] = fuse(server) ? 1 : 0;
        if (fused[server] == 1) {
          place(op, part, true);
        } else {
          place(DataOp::Push, push_half(part), false);
          place(DataOp::Pull, pull_half(part), true);
        }
      } else {
        place(op, part, op == DataOp::Pull);
      }
    }
    request->remaining = request->units + 1;  // + 1: the units cannot finish it while being queued
    // For a small request, what the windows allow leaves from this thread:
    // waking the communication thread costs a context switch, the largest
    // part of a small request's latency. Fused messages always leave here
    // (fuse() checked the window). A big request's encoding (copying
    // megabytes) stays off the caller's thread, which in overlapped training
    // is running backward; and its fresh multi-megabyte messages, allocated
    // in the communication thread's malloc arena, are reused there instead
    // of being faulted in again each time from the main arena (measured:
    // 16 MiB pushes 15-40% slower when encoded here).
    for (size_t lane = 0; lane < lanes_.size() && send_here; ++lane) {
      Lane& l = lanes_[lane];
      while (touched[lane] && l.in_flight < window_ && !l.queued.empty()) {
        batches.emplace_back(static_cast<int>(lane), take_batch(l));
        ++l.in_flight;
      }
    }
    wake = !send_here;
    if (outstanding_.size() > 64) {
      outstanding_.erase(std::remove_if(outstanding_.begin(), outstanding_.end(),
                                        [](const std::shared_ptr<Completion>& c) { return c->done(); }),
                         outstanding_.end());
    }
    outstanding_.push_back(request->completion);
    last_progress_ = std::chrono::steady_clock::now();
  }
  if (wake) wake_.notify_all();
  for (auto& [lane, units] : batches) send_batch(lane, std::move(units));
  // Whatever did not fit the windows leaves from the communication thread
  // as replies make room; it is woken then (on_reply).
  finish_unit(request, std::nullopt);
  return request->completion;
}

}  // namespace dt::kvstore
