#include "ps/server/key_store.h"
#include "ps/server/key_store_entry.h"

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>

namespace dt::ps {

using core::DType;
using core::Error;
using core::ErrorCode;

ServerKeyStore::ServerKeyStore(int num_workers, uint64_t memory_limit_bytes, const ops::cpu::ReductionSettings& reduction)
    : num_workers_(num_workers),
      cpu_(core::make_cpu_context()),
      reduction_(reduction),
      roster_(num_workers),
      memory_limit_(memory_limit_bytes),
      automatic_limit_(memory_limit_bytes == 0) {
  if (num_workers < 1) throw Error(ErrorCode::kInvalidArgument, "a server store needs at least one worker");
  if (automatic_limit_) {
    const long pages = ::sysconf(_SC_PHYS_PAGES);
    const long page = ::sysconf(_SC_PAGESIZE);
    memory_limit_ = pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) / 2
                                          : uint64_t{1} << 40;
  }
}

ServerKeyStore::ServerKeyStore(Mode mode, int num_workers) : ServerKeyStore(num_workers) { set_mode(mode); }

ServerKeyStore::~ServerKeyStore() = default;

uint64_t ServerKeyStore::memory_limit() const {
  std::shared_lock<std::shared_mutex> lock(entries_mutex_);
  return memory_limit_;
}

uint64_t ServerKeyStore::memory_used() const {
  std::shared_lock<std::shared_mutex> lock(entries_mutex_);
  return memory_used_ + rules_.compression_bytes();
}

void ServerKeyStore::check_worker(int worker, const char* op) const {
  if (worker < 0 || worker >= num_workers_) {
    throw Error(ErrorCode::kInvalidArgument, std::string(op) + " from worker " + std::to_string(worker) + " of " +
                                                 std::to_string(num_workers_));
  }
}

void ServerKeyStore::throw_if_failed() const {
  std::lock_guard<std::mutex> lock(failure_mutex_);
  if (failure_) throw *failure_;
}

ServerKeyStore::Entry& ServerKeyStore::find(const PartInfo& info, const char* op) const {
  std::shared_lock<std::shared_mutex> lock(entries_mutex_);
  auto it = entries_.find({info.part.key, info.part.begin});
  if (it == entries_.end()) {
    throw Error(ErrorCode::kNotFound, std::string(op) + ": " + part_name(info.part) + " has not been initialised");
  }
  return *it->second;
}

ServerKeyStore::Entry& ServerKeyStore::find_or_create(const PartInfo& info, const char* op) {
  const PartKey& p = info.part;
  std::unique_lock<std::shared_mutex> lock(entries_mutex_);
  auto it = entries_.find({p.key, p.begin});
  if (it == entries_.end()) {
    // The stored value and the round's sum: checked before anything of
    // the part exists, so a refused init leaves nothing behind.
    const uint64_t needed = 2 * static_cast<uint64_t>(p.end - p.begin) * core::dtype_size(info.dtype);
    const uint64_t used = memory_used_ + rules_.compression_bytes();
    if (needed > memory_limit_ || used > memory_limit_ - needed) {
      throw Error(ErrorCode::kOutOfMemory,
                  std::string(op) + ": " + part_name(p) + " needs " + std::to_string(needed) + " bytes; this server holds " +
                      std::to_string(used) + " of its limit of " + std::to_string(memory_limit_) +
                      " bytes for keys (DT_PS_SERVER_MEMORY_LIMIT" +
                      (automatic_limit_ ? ", automatic: twice the keys held at the first push" : "") + ")");
    }
    memory_used_ += needed;
    it = entries_.emplace(std::make_pair(p.key, p.begin), nullptr).first;
  }
  auto& slot = it->second;
  if (!slot) slot = std::make_unique<Entry>(info, next_optimizer_key_++, num_workers_, rules_, roster_, cpu_, reduction_);
  return *slot;
}

void ServerKeyStore::init(int worker, const PartInfo& info, const void* data, size_t bytes, bool resent) {
  throw_if_failed();
  check_worker(worker, "init");
  if (has_departed(worker)) {
    throw Error(ErrorCode::kPeerLost, "init from worker " + std::to_string(worker) + ", which the job goes on without");
  }
  const PartKey& p = info.part;
  if (p.begin < 0 || p.end <= p.begin || p.end > info.shape.numel()) {
    throw Error(ErrorCode::kInvalidArgument, "init: " + part_name(p) + " is not inside a tensor of " +
                                                 std::to_string(info.shape.numel()) + " elements");
  }
  Entry& e = find_or_create(info, "init");
  std::lock_guard<std::mutex> lock(e.mutex);
  e.rounds.check(info, bytes, "init");
  // A worker joining the running job initialises a new copy as any part: it
  // keeps the value it was filled with.
  if (e.copy.adopted()) return;
  if (e.rounds.inited_by(worker)) {
    // A joined worker initialises as every worker does; the part keeps the
    // job's value.
    if (resent || e.attendance.joined_at(worker) > 0) return;
    throw Error(ErrorCode::kBadState, "init: worker " + std::to_string(worker) + " initialised " +
                                          part_name(p) + " twice");
  }
  e.rounds.init(worker, data);
}

bool ServerKeyStore::push(int worker, const PartInfo& info, int64_t round, const void* data, size_t bytes,
                          PushDone done, const optim::UpdateNumbers& numbers, const PushRoute& route) {
  throw_if_failed();
  check_worker(worker, "push");
  if (has_departed(worker)) {
    // Its round may already have completed without it: never counted late.
    throw Error(ErrorCode::kPeerLost, "push from worker " + std::to_string(worker) + ", which the job goes on without");
  }
  if (automatic_limit_ && !pushed_.exchange(true)) {
    // The job's initial key set is known once training starts.
    std::unique_lock<std::shared_mutex> lock(entries_mutex_);
    memory_limit_ = std::max(2 * memory_used_, kAutomaticMemoryFloor);
  }
  std::unique_lock<std::mutex> lock;
  Entry& e = route.adopt_from >= 0 ? adopting_locked(worker, info, round, route.adopt_from, lock) : find(info, "push");
  if (!lock.owns_lock()) lock = std::unique_lock<std::mutex>(e.mutex);
  e.rounds.check(info, bytes, "push");
  // A new copy still being filled keeps what it is sent (or has it kept
  // already, for a resent push): its answer says so.
  const bool filling = e.copy.filling();
  if (!core::is_floating(info.dtype)) {
    throw Error(ErrorCode::kNotSupported, "push: " + part_name(info.part) + " has the integer dtype " +
                                              core::dtype_name(info.dtype) + "; pushes are summed");
  }
  if (mode() == Mode::kSync) {
    if (answered_already_locked(e, worker, round, done, route.resent)) return filling;
    e.rounds.check_round(worker, round, e.rounds.held_push(worker, round) != nullptr, !filling);
  }
  if (!e.rounds.must_hold(round)) {
    e.rounds.push(worker, round, data, done, numbers);
    return filling;
  }
  if (filling) {
    // A new copy keeps the bytes and answers at once: a worker waiting
    // here would stop its rounds on the part's other holder, which may be
    // what another worker, still unaware of the copy, waits for before its
    // first push here (a deadlock).
    e.rounds.hold(worker, round, data, [](const Error*) {}, numbers);
    e.copy.keep_needed(worker, round, e.rounds);
    done(nullptr);
    request_fill_locked(e);
    return filling;
  }
  e.rounds.hold(worker, round, data, std::move(done), numbers);
  return filling;
}

bool ServerKeyStore::answered_already_locked(Entry& e, int worker, int64_t round, PushDone& done, bool resent) {
  const int64_t last = e.rounds.last_pushed(worker);
  PartRounds::HeldPush* held_already = e.rounds.held_push(worker, round);
  if (resent && held_already) {
    // Answered together with the first copy, when it is consumed.
    held_already->done = [first = std::move(held_already->done), again = std::move(done)](const Error* error) {
      first(error);
      again(error);
    };
    return true;
  }
  if (resent && round <= last && round > 0) {
    done(nullptr);  // counted once already
    return true;
  }
  if (round == last + 1 && round <= e.copy.filled_round() && !held_already) {
    e.rounds.set_last_pushed(worker, round);
    done(nullptr);
    return true;
  }
  return false;
}

void ServerKeyStore::check_part(const PartInfo& info, const char* op) const {
  Entry& e = find(info, op);
  std::lock_guard<std::mutex> lock(e.mutex);
  e.rounds.check(info, e.rounds.bytes(), op);
}

void ServerKeyStore::pull(const PartInfo& info, int64_t round, PullDone done) {
  throw_if_failed();
  Entry& e = find(info, "pull");
  std::lock_guard<std::mutex> lock(e.mutex);
  e.rounds.check(info, e.rounds.bytes(), "pull");
  if (e.copy.adopted() && !e.rounds.ready()) {
    // Pulls come here only once the holders this copy was being filled
    // from are gone: the part is lost.
    throw Error(ErrorCode::kPeerLost, "pull: " + part_name(info.part) +
                                          " is a new copy on this server that was still being filled when the "
                                          "servers holding the part were lost");
  }
  e.rounds.pull(round, std::move(done));
}

void ServerKeyStore::set_optimizer(const optim::OptimizerConfig& config) {
  if (!rules_.set_optimizer(config)) return;
  // What parts hold from now on are weights, never sent encoded: no
  // encoding of an earlier round answers a pull after this returns (a
  // round applying now sees the optimizer, or had encoded before this
  // clears it).
  std::shared_lock<std::shared_mutex> map_lock(entries_mutex_);
  for (const auto& [id, entry] : entries_) {
    std::lock_guard<std::mutex> lock(entry->mutex);
    entry->rounds.clear_encoding();
  }
}

bool ServerKeyStore::pulls_may_be_encoded() const {
  return rules_.is_sync() && rules_.codec() != nullptr && rules_.optimizer() == nullptr;
}

void ServerKeyStore::set_learning_rate(double lr) {
  auto opt = rules_.optimizer();
  if (!opt) throw Error(ErrorCode::kBadState, "set_learning_rate: the server has no optimizer");
  opt->set_learning_rate(lr);
}

void ServerKeyStore::set_rescale_grad(double rescale) {
  auto opt = rules_.optimizer();
  if (!opt) throw Error(ErrorCode::kBadState, "set_rescale_grad: the server has no optimizer");
  opt->set_rescale_grad(rescale);
}

double ServerKeyStore::learning_rate() const {
  auto opt = rules_.optimizer();
  if (!opt) throw Error(ErrorCode::kBadState, "learning_rate: the server has no optimizer");
  return opt->base_learning_rate();
}

double ServerKeyStore::rescale_grad() const {
  auto opt = rules_.optimizer();
  if (!opt) throw Error(ErrorCode::kBadState, "rescale_grad: the server has no optimizer");
  return opt->rescale_grad();
}

void ServerKeyStore::fail(const Error& error) {
  {
    std::lock_guard<std::mutex> lock(failure_mutex_);
    if (failure_) return;
    failure_ = std::make_unique<Error>(error);
  }
  std::shared_lock<std::shared_mutex> map_lock(entries_mutex_);
  for (const auto& [id, entry] : entries_) {
    std::lock_guard<std::mutex> lock(entry->mutex);
    entry->rounds.fail(error);
  }
}

void ServerKeyStore::worker_departed(int worker, int64_t pid) {
  roster_.depart(worker, pid, [this](int w) { depart_parts(w); });
}

void ServerKeyStore::depart_parts(int worker) {
  std::shared_lock<std::shared_mutex> map_lock(entries_mutex_);
  for (const auto& [id, entry] : entries_) {
    Entry& e = *entry;
    std::lock_guard<std::mutex> lock(e.mutex);
    e.attendance.depart(worker, e.rounds);
    if (e.copy.filling()) request_fill_locked(e);
    if (!rules_.is_sync() || !e.rounds.ready()) continue;
    e.rounds.advance();
  }
}

bool ServerKeyStore::has_departed(int worker) const { return roster_.has_departed(worker); }

int64_t ServerKeyStore::join_floor(int worker) const {
  check_worker(worker, "join");
  int64_t floor = 1;
  std::shared_lock<std::shared_mutex> map_lock(entries_mutex_);
  for (const auto& [id, entry] : entries_) {
    std::lock_guard<std::mutex> lock(entry->mutex);
    // The round being summed may have passed this worker's rank already.
    floor = std::max({floor, entry->rounds.applied_round() + 2, entry->rounds.last_pushed(worker) + 1});
  }
  return floor;
}

void ServerKeyStore::join(int worker, int64_t pid, int64_t round) {
  throw_if_failed();
  check_worker(worker, "join");
  if (round < 1) throw Error(ErrorCode::kInvalidArgument, "join at round " + std::to_string(round));
  roster_.join(
      worker, pid, [this](int w) { depart_parts(w); },
      [&] {
        const bool sync = rules_.is_sync();
        std::shared_lock<std::shared_mutex> map_lock(entries_mutex_);
        for (const auto& [id, entry] : entries_) {
          std::lock_guard<std::mutex> lock(entry->mutex);
          entry->attendance.join(worker, round, sync, entry->rounds);
        }
      });
}

std::vector<std::pair<int, int64_t>> ServerKeyStore::joined_workers() const { return roster_.joined_workers(); }

core::NamedArrays ServerKeyStore::optimizer_state() const {
  auto opt = rules_.optimizer();
  if (!opt) return {};
  std::shared_lock<std::shared_mutex> map_lock(entries_mutex_);
  // Optimizer::state must not overlap an update: hold every part (always in
  // map order; no other path holds two parts at once).
  std::vector<std::unique_lock<std::mutex>> locks;
  std::map<std::string, const PartKey*> by_optimizer_key;
  for (const auto& [id, entry] : entries_) {
    locks.emplace_back(entry->mutex);
    by_optimizer_key.emplace(std::to_string(entry->rounds.optimizer_key()), &entry->rounds.info().part);
  }
  core::NamedArrays out;
  for (const auto& [name, array] : opt->state("")) {
    core::NDArray copy = core::NDArray::empty(cpu_, array.dtype(), array.shape());
    copy.copy_from(array);
    const size_t dot = name.find('.');
    if (dot == std::string::npos) {
      out.emplace_back(name, copy);
      continue;
    }
    const PartKey* part = by_optimizer_key.at(name.substr(0, dot));
    out.emplace_back(optim::part_state_name(part->key, part->begin, part->end, name.substr(dot + 1)), copy);
  }
  return out;
}

void ServerKeyStore::load_optimizer_state(const core::NamedArrays& arrays) {
  auto opt = rules_.optimizer();
  if (!opt) throw Error(ErrorCode::kBadState, "load_optimizer_state: the server has no optimizer");
  std::shared_lock<std::shared_mutex> map_lock(entries_mutex_);
  // The optimizer knows parts by their optimizer keys: translate
  // "<key>/<begin>/<end>.<slot>" back.
  core::NamedArrays translated;
  for (const auto& [name, array] : arrays) {
    if (name.find('.') == std::string::npos) {
      translated.emplace_back(name, array);
      continue;
    }
    const auto parsed = optim::parse_state_name(name);
    if (!parsed || !parsed->per_part) {
      throw Error(ErrorCode::kInvalidArgument, "load_optimizer_state: '" + name +
                                                   "' is not <key>/<begin>/<end>.<slot>, num_update or learning_rate");
    }
    auto it = entries_.find({parsed->key, parsed->begin});
    if (it == entries_.end() || it->second->rounds.info().part.end != parsed->end) {
      throw Error(ErrorCode::kNotFound, "load_optimizer_state: " +
                                            part_name(PartKey{parsed->key, parsed->begin, parsed->end}) +
                                            " is not held by this server");
    }
    translated.emplace_back(std::to_string(it->second->rounds.optimizer_key()) + "." + parsed->slot, array);
  }
  // Optimizer::load_state must not overlap an update: hold every part, in
  // map order as optimizer_state() does.
  std::vector<std::unique_lock<std::mutex>> locks;
  for (const auto& [id, entry] : entries_) locks.emplace_back(entry->mutex);
  opt->load_state(translated, "");
}

ServerKeyStore::Entry& ServerKeyStore::adopting_locked(int worker, const PartInfo& info, int64_t round, int source,
                                                       std::unique_lock<std::mutex>& lock) {
  if (mode() != Mode::kSync) {
    throw Error(ErrorCode::kNotSupported, "a new copy of " + part_name(info.part) +
                                              ": replicated servers are dist_sync only");
  }
  if (round < 1) {
    throw Error(ErrorCode::kInvalidArgument, "a push of round " + std::to_string(round) + " to a new copy of " +
                                                 part_name(info.part));
  }
  const PartKey& p = info.part;
  if (p.begin < 0 || p.end <= p.begin || p.end > info.shape.numel()) {
    throw Error(ErrorCode::kInvalidArgument, "push: " + part_name(p) + " is not inside a tensor of " +
                                                 std::to_string(info.shape.numel()) + " elements");
  }
  // Most pushes find the part made already: the map's exclusive lock only
  // for the first.
  Entry* found = nullptr;
  {
    std::shared_lock<std::shared_mutex> map_lock(entries_mutex_);
    auto it = entries_.find({p.key, p.begin});
    if (it != entries_.end()) found = it->second.get();
  }
  Entry& e = found != nullptr ? *found : find_or_create(info, "a new copy");
  lock = std::unique_lock<std::mutex>(e.mutex);
  e.rounds.check(info, e.rounds.bytes(), "push");
  if (e.rounds.ready()) return e;  // a part this server holds, or a copy filled already
  // A part of this server's, waiting for rank 0's init.
  if (!e.copy.adopted() && e.rounds.inited_by_anyone()) return e;
  e.copy.adopt(worker, round, source, e.rounds);
  return e;
}

void ServerKeyStore::request_fill_locked(Entry& e) {
  const auto request = e.copy.fill_request(e.rounds.info(), [this](int w) { return roster_.has_departed(w); });
  if (!request) return;
  std::lock_guard<std::mutex> lock(fill_mutex_);
  if (fill_wanted_) fill_wanted_(*request);
}

void ServerKeyStore::on_fill_wanted(std::function<void(const FillRequest&)> wanted) {
  std::lock_guard<std::mutex> lock(fill_mutex_);
  fill_wanted_ = std::move(wanted);
}

ServerKeyStore::PartState ServerKeyStore::state_locked(const Entry& e) const {
  PartState state;
  state.round = e.rounds.applied_round();
  state.value = e.rounds.value().data();
  state.bytes = e.rounds.bytes();
  if (auto opt = rules_.optimizer()) state.optimizer = opt->key_state(e.rounds.optimizer_key());
  const PartKey& p = e.rounds.info().part;
  if (const auto* residual = rules_.pull_feedback().residual(p.key, p.begin)) state.pull_residual = *residual;
  state.encoded = e.rounds.encoded();
  state.encoding = e.rounds.encoding();
  return state;
}

void ServerKeyStore::part_state(const PartInfo& info, int64_t min_round, PartStateDone done) {
  if (mode() != Mode::kSync) throw Error(ErrorCode::kNotSupported, "a part's state is handed over in dist_sync only");
  Entry& e = find(info, "part state");
  // Answered as a pull of that round is (its checks, its window), with the
  // part's lock held, from the push that applies the round when it is not
  // applied yet.
  pull(info, min_round, [this, &e, done = std::move(done)](const Error* error, const PullAnswer&) {
    if (error) {
      done(error, PartState{});
      return;
    }
    done(nullptr, state_locked(e));
  });
}

void ServerKeyStore::install(const PartInfo& info, const PartState& state) {
  throw_if_failed();
  Entry& e = find(info, "install");
  std::lock_guard<std::mutex> lock(e.mutex);
  e.rounds.check(info, e.rounds.bytes(), "install");
  e.copy.check_install(info, e.rounds.bytes(), state);
  auto opt = rules_.optimizer();
  if (!state.optimizer.empty() && !opt) {
    throw Error(ErrorCode::kBadState, "install: " + part_name(info.part) +
                                          " came with optimizer state, and this server has no optimizer");
  }
  const auto codec = rules_.codec();
  const bool compressed = state.encoded || !state.pull_residual.empty();
  if (compressed && (!codec || info.dtype != DType::kFloat32 || opt)) {
    throw Error(ErrorCode::kBadState, "install: " + part_name(info.part) +
                                          " came with compressed pulls, and this server's pulls are not compressed");
  }
  const size_t n = static_cast<size_t>(info.part.end - info.part.begin);
  if (!state.pull_residual.empty() && state.pull_residual.size() != n) {
    throw Error(ErrorCode::kShapeMismatch, "install: " + part_name(info.part) + " came with a residual of " +
                                               std::to_string(state.pull_residual.size()) + " elements");
  }
  // Checked before anything changes: a refused state leaves the part waiting.
  if (opt) opt->load_key_state(e.rounds.optimizer_key(), state.optimizer);
  if (!state.pull_residual.empty()) {
    rules_.pull_feedback().restore(info.part.key, info.part.begin, state.pull_residual.data(), n);
  }
  if (compressed) e.rounds.count_compression(*codec);
  e.copy.install(state, e.rounds, e.attendance);
}

void ServerKeyStore::fail_fill(const PartInfo& info, const Error& error) {
  Entry& e = find(info, "fail fill");
  std::lock_guard<std::mutex> lock(e.mutex);
  e.copy.fail(error, e.rounds);
}

bool ServerKeyStore::filling(const PartInfo& info) const {
  Entry& e = find(info, "filling");
  std::lock_guard<std::mutex> lock(e.mutex);
  return e.copy.filling();
}

}  // namespace dt::ps
