#include "ps/server/key_store.h"

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <utility>

#include "ops/cpu/tensor_math.h"

namespace dt::ps {

using core::DType;
using core::Error;
using core::ErrorCode;
using core::NDArray;
using core::Shape;

namespace {

// The end of a gap in a worker's rounds that no join has closed.
constexpr int64_t kNever = std::numeric_limits<int64_t>::max();

std::string part_name(const PartKey& p) {
  return "key " + std::to_string(p.key) + " [" + std::to_string(p.begin) + ", " + std::to_string(p.end) + ")";
}

}  // namespace

struct ServerKeyStore::Entry {
  std::mutex mutex;
  PartInfo info;
  uint64_t optimizer_key = 0;  // unique per part: the optimizer keeps state per part
  size_t bytes = 0;
  std::vector<bool> inited_by;
  bool ready = false;  // rank 0's value has arrived
  NDArray stored;      // 1-d, the part's elements
  NDArray merged;      // the round's sum in rank order (the optimizer's gradient)
  // dist_sync: pushes that arrived before a lower rank's, kept until the
  // ranks below them are summed.
  std::vector<std::vector<uint8_t>> staged;
  std::vector<int64_t> pushed_round;  // per worker: the last round it pushed (0: none)
  // Per worker: the rounds [first, second) it takes no part in: the job went
  // on without it (DT_WORKER_LOSS=continue) from the round after its last
  // push until it joined again at second (kNever: it has not).
  std::vector<std::vector<std::pair<int64_t, int64_t>>> absent;
  // Per worker: the round it joined this part at (0: it started with it).
  std::vector<int64_t> joined_at;
  int summed = 0;                     // ranks [0, summed) are in merged, or passed (departed)
  int terms = 0;                      // how many pushes merged holds this round
  int64_t applied_round = 0;
  std::vector<HeldPush> held;  // next round's pushes, or pushes before rank 0's init
  std::vector<std::pair<int64_t, PullDone>> waiting_pulls;
  // Compressed pulls: the applied round's sum as its pulls get it (null:
  // they get the stored value), in mode `encoding` (0: a round that went in
  // full); replaced, never changed, when the next round applies.
  std::shared_ptr<const std::vector<uint8_t>> encoded;
  uint8_t encoding = 0;
  bool compression_counted = false;  // its residual and encoding are in compression_bytes_
  // A new copy waiting for its state: the server to ask (-1: none, the part
  // is not a new copy), each worker's first push here (0: none yet), and
  // whether the fill was asked for.
  int adopt_source = -1;
  std::vector<int64_t> adopt_round;
  bool fill_requested = false;
  bool adopted = false;  // created as a new copy: workers' inits never store into it
  // A filled copy: the round its state came at. A worker's pushes of rounds
  // up to it that arrive after the fill (they were on their way: workers do
  // not wait at a copy) are in the state already: answered, not counted.
  int64_t filled_round = 0;
  // dist_sync: the numbers worker 0 pushed the round being summed with
  // (empty until its push is in, or when it sent none).
  optim::UpdateNumbers round_numbers;
};

ServerKeyStore::ServerKeyStore(int num_workers, uint64_t memory_limit_bytes)
    : num_workers_(num_workers),
      cpu_(core::make_cpu_context()),
      departed_(new std::atomic<bool>[static_cast<size_t>(std::max(num_workers, 1))]),
      incarnation_(static_cast<size_t>(std::max(num_workers, 1)), 0),
      memory_limit_(memory_limit_bytes),
      automatic_limit_(memory_limit_bytes == 0) {
  if (num_workers < 1) throw Error(ErrorCode::kInvalidArgument, "a server store needs at least one worker");
  for (int w = 0; w < num_workers; ++w) departed_[static_cast<size_t>(w)] = false;
  if (automatic_limit_) {
    const long pages = ::sysconf(_SC_PHYS_PAGES);
    const long page = ::sysconf(_SC_PAGESIZE);
    memory_limit_ = pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) / 2
                                          : uint64_t{1} << 40;
  }
}

uint64_t ServerKeyStore::memory_limit() const {
  std::shared_lock<std::shared_mutex> lock(entries_mutex_);
  return memory_limit_;
}

uint64_t ServerKeyStore::memory_used() const {
  std::shared_lock<std::shared_mutex> lock(entries_mutex_);
  return memory_used_ + compression_bytes_.load();
}

ServerKeyStore::ServerKeyStore(Mode mode, int num_workers) : ServerKeyStore(num_workers) { set_mode(mode); }

void ServerKeyStore::set_mode(Mode mode) {
  int expected = -1;
  if (mode_.compare_exchange_strong(expected, static_cast<int>(mode)) || expected == static_cast<int>(mode)) return;
  throw Error(ErrorCode::kBadState, std::string("workers disagree on the kvstore type: this server runs ") +
                                        (expected == static_cast<int>(Mode::kSync) ? "dist_sync" : "dist_async") +
                                        ", a worker asked for " +
                                        (mode == Mode::kSync ? "dist_sync" : "dist_async"));
}

ServerKeyStore::Mode ServerKeyStore::mode() const {
  const int mode = mode_.load();
  if (mode < 0) throw Error(ErrorCode::kBadState, "no worker has declared dist_sync or dist_async yet");
  return static_cast<Mode>(mode);
}

ServerKeyStore::~ServerKeyStore() = default;

void ServerKeyStore::throw_if_failed() const {
  std::lock_guard<std::mutex> lock(optimizer_mutex_);
  if (failure_) throw *failure_;
}

std::shared_ptr<optim::Optimizer> ServerKeyStore::optimizer() const {
  std::lock_guard<std::mutex> lock(optimizer_mutex_);
  return optimizer_;
}

std::shared_ptr<const compression::GradientCodec> ServerKeyStore::codec() const {
  std::lock_guard<std::mutex> lock(optimizer_mutex_);
  return codec_;
}

void ServerKeyStore::check(const Entry& e, const PartInfo& info, size_t bytes, const char* op) const {
  if (info.dtype != e.info.dtype) {
    throw Error(ErrorCode::kDtypeMismatch, std::string(op) + ": " + part_name(info.part) + " holds " +
                                               core::dtype_name(e.info.dtype) + ", got " +
                                               core::dtype_name(info.dtype));
  }
  // The stored shape is not told back: a peer learns what it sent was
  // wrong, not what the key holds.
  if (info.shape != e.info.shape || info.part.end != e.info.part.end) {
    throw Error(ErrorCode::kShapeMismatch, std::string(op) + ": " + part_name(info.part) + " of a tensor " +
                                               info.shape.to_string() + " does not match the part this server holds");
  }
  if (bytes != e.bytes) {
    throw Error(ErrorCode::kShapeMismatch, std::string(op) + ": " + part_name(info.part) + " sent " +
                                               std::to_string(bytes) + " bytes, not the part's size");
  }
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
    const uint64_t used = memory_used_ + compression_bytes_.load();
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
  if (!slot) {
    auto created = std::make_unique<Entry>();
    created->info = info;
    created->optimizer_key = next_optimizer_key_++;
    created->bytes = static_cast<size_t>(p.end - p.begin) * core::dtype_size(info.dtype);
    created->inited_by.assign(static_cast<size_t>(num_workers_), false);
    created->staged.resize(static_cast<size_t>(num_workers_));
    created->pushed_round.assign(static_cast<size_t>(num_workers_), 0);
    created->absent.resize(static_cast<size_t>(num_workers_));
    created->joined_at.assign(static_cast<size_t>(num_workers_), 0);
    // A part new to a job that went on without a worker: not waiting for it.
    for (int w = 0; w < num_workers_; ++w) {
      if (departed_[static_cast<size_t>(w)]) created->absent[static_cast<size_t>(w)].emplace_back(1, kNever);
    }
    slot = std::move(created);
  }
  return *slot;
}

void ServerKeyStore::init(int worker, const PartInfo& info, const void* data, size_t bytes, bool resent) {
  throw_if_failed();
  if (worker < 0 || worker >= num_workers_) {
    throw Error(ErrorCode::kInvalidArgument, "init from worker " + std::to_string(worker) + " of " +
                                                 std::to_string(num_workers_));
  }
  if (has_departed(worker)) {
    throw Error(ErrorCode::kPeerLost, "init from worker " + std::to_string(worker) + ", which the job goes on without");
  }
  const PartKey& p = info.part;
  if (p.begin < 0 || p.end <= p.begin || p.end > info.shape.numel()) {
    throw Error(ErrorCode::kInvalidArgument, "init: " + part_name(p) + " is not inside a tensor of " +
                                                 std::to_string(info.shape.numel()) + " elements");
  }
  Entry* e = &find_or_create(info, "init");
  std::lock_guard<std::mutex> lock(e->mutex);
  check(*e, info, bytes, "init");
  // A worker joining the running job initialises a new copy as any part: it
  // keeps the value it was filled with.
  if (e->adopted) return;
  if (e->inited_by[static_cast<size_t>(worker)]) {
    // A joined worker initialises as every worker does; the part keeps the
    // job's value.
    if (resent || e->joined_at[static_cast<size_t>(worker)] > 0) return;
    throw Error(ErrorCode::kBadState, "init: worker " + std::to_string(worker) + " initialised " +
                                          part_name(p) + " twice");
  }
  e->inited_by[static_cast<size_t>(worker)] = true;
  if (worker != 0) return;
  const Shape shape({p.end - p.begin});
  e->stored = NDArray::empty(cpu_, info.dtype, shape);
  e->merged = NDArray::empty(cpu_, info.dtype, shape);
  std::memcpy(e->stored.data(), data, bytes);
  e->ready = true;
  answer_pulls_locked(*e);
  release_held_locked(*e);
}

bool ServerKeyStore::push(int worker, const PartInfo& info, int64_t round, const void* data, size_t bytes,
                          PushDone done, bool resent, int adopt_from, const optim::UpdateNumbers& numbers) {
  throw_if_failed();
  if (worker < 0 || worker >= num_workers_) {
    throw Error(ErrorCode::kInvalidArgument, "push from worker " + std::to_string(worker) + " of " +
                                                 std::to_string(num_workers_));
  }
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
  Entry& e = adopt_from >= 0 ? adopting_locked(worker, info, round, adopt_from, lock) : find(info, "push");
  if (!lock.owns_lock()) lock = std::unique_lock<std::mutex>(e.mutex);
  check(e, info, bytes, "push");
  // A new copy still being filled keeps what it is sent (or has it kept
  // already, for a resent push): its answer says so.
  const bool filling = e.adopt_source >= 0;
  if (!core::is_floating(info.dtype)) {
    throw Error(ErrorCode::kNotSupported, "push: " + part_name(info.part) + " has the integer dtype " +
                                              core::dtype_name(info.dtype) + "; pushes are summed");
  }
  if (mode() == Mode::kSync) {
    const int64_t last = e.pushed_round[static_cast<size_t>(worker)];
    HeldPush* held_already = nullptr;
    for (HeldPush& h : e.held) {
      if (h.worker == worker && h.round == round) held_already = &h;
    }
    if (resent && held_already) {
      // Answered together with the first copy, when it is consumed.
      held_already->done = [first = std::move(held_already->done), again = std::move(done)](const Error* error) {
        first(error);
        again(error);
      };
      return filling;
    }
    if (resent && round <= last && round > 0) {
      done(nullptr);  // counted once already
      return filling;
    }
    if (round == last + 1 && round <= e.filled_round && !held_already) {
      e.pushed_round[static_cast<size_t>(worker)] = round;
      done(nullptr);
      return filling;
    }
    if (round <= last || held_already) {
      throw Error(ErrorCode::kBadState, "worker " + std::to_string(worker) + " pushed key " +
                                            std::to_string(info.part.key) + " round " + std::to_string(round) +
                                            " twice");
    }
    if (round != last + 1) {
      throw Error(ErrorCode::kBadState, "worker " + std::to_string(worker) + " pushed key " +
                                            std::to_string(info.part.key) + " round " + std::to_string(round) +
                                            " after round " + std::to_string(last));
    }
    if (e.adopt_source < 0 && round > e.applied_round + kRoundWindow) {
      throw Error(ErrorCode::kBadState, "worker " + std::to_string(worker) + " pushed key " +
                                            std::to_string(info.part.key) + " round " + std::to_string(round) +
                                            " while round " + std::to_string(e.applied_round + 1) +
                                            " is being summed (rule: at most " + std::to_string(kRoundWindow) +
                                            " rounds ahead)");
    }
  }
  // Held: before rank 0's value exists (or a new copy's state), or (sync)
  // one round ahead of the round being merged.
  if (!e.ready || (mode() == Mode::kSync && round > e.applied_round + 1)) {
    const auto* begin = static_cast<const uint8_t*>(data);
    if (e.adopt_source >= 0) {
      // A new copy keeps the bytes and answers at once: a worker waiting
      // here would stop its rounds on the part's other holder, which may be
      // what another worker, still unaware of the copy, waits for before
      // its first push here (a deadlock).
      e.held.push_back(
          HeldPush{worker, round, std::vector<uint8_t>(begin, begin + bytes), [](const Error*) {}, numbers});
      e.pushed_round[static_cast<size_t>(worker)] = round;
      keep_needed_held_locked(e, worker, round);
      done(nullptr);
      request_fill_locked(e);
      return filling;
    }
    e.held.push_back(HeldPush{worker, round, std::vector<uint8_t>(begin, begin + bytes), std::move(done), numbers});
    if (mode() == Mode::kSync) e.pushed_round[static_cast<size_t>(worker)] = round;
    return filling;
  }
  // Elements wider than the payload's alignment (nng bodies start 4 bytes
  // past an 8-byte boundary) are read from an aligned copy.
  if (reinterpret_cast<uintptr_t>(data) % core::dtype_size(info.dtype) != 0) {
    const auto* begin = static_cast<const uint8_t*>(data);
    const std::vector<uint8_t> aligned(begin, begin + bytes);
    push_locked(e, worker, round, aligned.data(), done, numbers);
    return filling;
  }
  push_locked(e, worker, round, data, done, numbers);
  return filling;
}

void ServerKeyStore::push_locked(Entry& e, int worker, int64_t round, const void* data, PushDone& done,
                                 const optim::UpdateNumbers& numbers) {
  if (mode() == Mode::kAsync) {
    apply_locked(e, data);
    done(nullptr);
    return;
  }
  e.pushed_round[static_cast<size_t>(worker)] = round;
  // This push is of the round being summed (later ones are held).
  if (worker == 0) e.round_numbers = numbers;
  accumulate_locked(e, worker, data);
  done(nullptr);
  advance_locked(e);
}

void ServerKeyStore::complete_round_locked(Entry& e) {
  apply_locked(e, nullptr);
  e.summed = 0;
  e.terms = 0;
  ++e.applied_round;
  encode_locked(e);
  answer_pulls_locked(e);
  release_held_locked(e);
}

void ServerKeyStore::accumulate_locked(Entry& e, int worker, const void* data) {
  // The rank-order sum merged = ((g0 + g1) + g2) + ..., exactly what a local
  // kvstore computes for push([g0, g1, ...]): copy the first, add the rest.
  // A push whose turn has come goes in at once; others wait in staged.
  if (worker != e.summed) {
    auto& staged = e.staged[static_cast<size_t>(worker)];
    staged.resize(e.bytes);
    std::memcpy(staged.data(), data, e.bytes);
    return;
  }
  add_term_locked(e, data);
  ++e.summed;
}

void ServerKeyStore::add_term_locked(Entry& e, const void* data) {
  if (e.terms == 0) {
    std::memcpy(e.merged.data(), data, e.bytes);
  } else {
    ops::cpu::add(e.info.dtype, e.merged.data(), e.merged.data(), data, e.merged.size());
  }
  ++e.terms;
}

void ServerKeyStore::advance_locked(Entry& e) {
  const int64_t round = e.applied_round + 1;
  // Ranks that arrived early follow as soon as their turn comes; a departed
  // rank with no push for this round is passed over.
  while (e.summed < num_workers_) {
    const size_t rank = static_cast<size_t>(e.summed);
    auto& staged = e.staged[rank];
    if (!staged.empty()) {
      add_term_locked(e, staged.data());
      staged.clear();  // keeps the capacity for the next round
    } else if (!absent_locked(e, static_cast<int>(rank), round)) {
      return;
    }
    ++e.summed;
  }
  if (e.terms > 0) {
    complete_round_locked(e);
    return;
  }
  e.summed = 0;
  // A round no worker takes part in: when every worker departed for good
  // the job is ending, and nothing is applied. When some worker joined for
  // a later round (the workers this one waited for were all lost, and their
  // successors join after it), the round is empty: it changes nothing, and
  // the rounds go on to theirs.
  if (!returns_later_locked(e, round)) return;
  complete_empty_round_locked(e);
  advance_locked(e);
}

bool ServerKeyStore::returns_later_locked(const Entry& e, int64_t round) {
  for (const auto& gaps : e.absent) {
    for (const auto& [first, end] : gaps) {
      if (round >= first && round < end && end != kNever) return true;
    }
  }
  return false;
}

void ServerKeyStore::complete_empty_round_locked(Entry& e) {
  e.round_numbers = {};
  e.encoded.reset();
  e.encoding = 0;
  // Without an optimizer the stored value is the round's sum: of nothing.
  if (!optimizer()) std::memset(e.stored.data(), 0, e.bytes);
  ++e.applied_round;
  encode_locked(e);
  answer_pulls_locked(e);
  release_held_locked(e);
}

bool ServerKeyStore::absent_locked(const Entry& e, int worker, int64_t round) {
  for (const auto& [first, end] : e.absent[static_cast<size_t>(worker)]) {
    if (round >= first && round < end) return true;
  }
  return false;
}

void ServerKeyStore::worker_departed(int worker, int64_t pid) {
  if (worker < 0 || worker >= num_workers_) return;
  std::lock_guard<std::mutex> membership(membership_mutex_);
  const int64_t current = incarnation_[static_cast<size_t>(worker)];
  // Late news of a process whose place a joined worker has taken.
  if (current != 0 && pid != 0 && pid != current) return;
  depart_locked(worker);
}

void ServerKeyStore::depart_locked(int worker) {
  if (departed_[static_cast<size_t>(worker)].exchange(true)) return;
  std::shared_lock<std::shared_mutex> map_lock(entries_mutex_);
  for (const auto& [id, entry] : entries_) {
    Entry& e = *entry;
    std::lock_guard<std::mutex> lock(e.mutex);
    // Its pushes held for later rounds were made before it left: they
    // count in their rounds, as the ones it finished did.
    e.absent[static_cast<size_t>(worker)].emplace_back(e.pushed_round[static_cast<size_t>(worker)] + 1, kNever);
    e.joined_at[static_cast<size_t>(worker)] = 0;
    if (e.adopt_source >= 0) request_fill_locked(e);
    if (mode_.load() != static_cast<int>(Mode::kSync) || !e.ready) continue;
    advance_locked(e);
  }
}

int64_t ServerKeyStore::join_floor(int worker) const {
  if (worker < 0 || worker >= num_workers_) {
    throw Error(ErrorCode::kInvalidArgument, "join from worker " + std::to_string(worker) + " of " +
                                                 std::to_string(num_workers_));
  }
  int64_t floor = 1;
  std::shared_lock<std::shared_mutex> map_lock(entries_mutex_);
  for (const auto& [id, entry] : entries_) {
    Entry& e = *entry;
    std::lock_guard<std::mutex> lock(e.mutex);
    // The round being summed may have passed this worker's rank already.
    floor = std::max({floor, e.applied_round + 2, e.pushed_round[static_cast<size_t>(worker)] + 1});
  }
  return floor;
}

void ServerKeyStore::join(int worker, int64_t pid, int64_t round) {
  throw_if_failed();
  if (worker < 0 || worker >= num_workers_) {
    throw Error(ErrorCode::kInvalidArgument, "join from worker " + std::to_string(worker) + " of " +
                                                 std::to_string(num_workers_));
  }
  if (round < 1) throw Error(ErrorCode::kInvalidArgument, "join at round " + std::to_string(round));
  const size_t w = static_cast<size_t>(worker);
  std::lock_guard<std::mutex> membership(membership_mutex_);
  if (incarnation_[w] != pid) {
    // The scheduler took this process in the place of the one before: that
    // one is gone, whether or not the news of it reached this server yet.
    depart_locked(worker);
    incarnation_[w] = pid;
  }
  {
    const bool sync = mode_.load() == static_cast<int>(Mode::kSync);
    std::shared_lock<std::shared_mutex> map_lock(entries_mutex_);
    for (const auto& [id, entry] : entries_) {
      Entry& e = *entry;
      std::lock_guard<std::mutex> lock(e.mutex);
      const int64_t joined = e.joined_at[w];
      if (sync && joined > 0 && e.pushed_round[w] >= joined) {
        throw Error(ErrorCode::kBadState, "worker " + std::to_string(worker) + " joined " + part_name(e.info.part) +
                                              " at round " + std::to_string(joined) + " and pushed since");
      }
      if (sync && (round < e.applied_round + 2 || (joined == 0 && round <= e.pushed_round[w]))) {
        throw Error(ErrorCode::kBadState, "join at round " + std::to_string(round) + ": " + part_name(e.info.part) +
                                              " is at round " + std::to_string(e.applied_round + 1) +
                                              " already (ask again)");
      }
      // Ends the gap its departure opened (or moves the end a join before
      // set): the rounds up to round - 1 go on without it.
      for (auto& gap : e.absent[w]) {
        if (gap.second == kNever || (joined > 0 && gap.second == joined)) gap.second = round;
      }
      e.joined_at[w] = round;
      if (!sync) continue;
      e.pushed_round[w] = round - 1;
      if (e.ready) advance_locked(e);
    }
  }
  departed_[w] = false;
}

std::vector<std::pair<int, int64_t>> ServerKeyStore::joined_workers() const {
  std::lock_guard<std::mutex> membership(membership_mutex_);
  std::vector<std::pair<int, int64_t>> joined;
  for (int w = 0; w < num_workers_; ++w) {
    const int64_t pid = incarnation_[static_cast<size_t>(w)];
    if (pid != 0 && !departed_[static_cast<size_t>(w)].load()) joined.emplace_back(w, pid);
  }
  return joined;
}

bool ServerKeyStore::has_departed(int worker) const {
  return worker >= 0 && worker < num_workers_ && departed_[static_cast<size_t>(worker)].load();
}

void ServerKeyStore::apply_locked(Entry& e, const void* single_value) {
  const optim::UpdateNumbers numbers = std::exchange(e.round_numbers, {});
  e.encoded.reset();  // whatever the stored value becomes, an older encoding is not it
  e.encoding = 0;
  if (single_value != nullptr) std::memcpy(e.merged.data(), single_value, e.bytes);
  if (auto opt = optimizer()) {
    opt->update(e.optimizer_key, e.stored, e.merged, numbers);
    return;
  }
  std::swap(e.stored, e.merged);
}

void ServerKeyStore::encode_locked(Entry& e) {
  const auto codec = this->codec();
  if (!codec || e.info.dtype != DType::kFloat32 || optimizer()) return;
  const size_t n = e.stored.size();
  const uint64_t key = e.info.part.key;
  const int64_t begin = e.info.part.begin;
  const bool feedback = codec->config().error_feedback;
  const size_t capacity = codec->max_encoded_size(n);
  if (!e.compression_counted) {
    e.compression_counted = true;
    compression_bytes_ += (feedback ? e.bytes : 0) + capacity;
  }
  // merged is free until the next round's first push (release_held_locked
  // comes after this): the compensated sum goes there.
  float* compensated = static_cast<float*>(e.merged.data());
  std::memcpy(compensated, e.stored.data(), e.bytes);
  auto bytes = std::make_shared<std::vector<uint8_t>>();
  try {
    compression::encode_with_feedback(*codec, feedback ? &pull_feedback_ : nullptr, key, begin, compensated, n,
                                      *bytes);
    e.encoding = static_cast<uint8_t>(codec->config().mode);
    // Held until the next round: a threshold encoding is sized for the worst case.
    if (bytes->size() < bytes->capacity() / 2) bytes->shrink_to_fit();
  } catch (const Error&) {
    // A sum the mode cannot hold (past fp16's range, a NaN): this round goes
    // in full, what earlier rounds left out included, so nothing remains to
    // carry. Workers see what an uncompressed job would have sent them.
    const auto* raw = reinterpret_cast<const uint8_t*>(compensated);
    bytes->assign(raw, raw + e.bytes);
    if (feedback) pull_feedback_.reset(key, begin, n);
    e.encoding = 0;
  }
  e.encoded = std::move(bytes);
}

ServerKeyStore::PullAnswer ServerKeyStore::answer_locked(const Entry& e) const {
  if (!e.encoded) return PullAnswer{e.stored.data(), e.bytes, 0, nullptr};
  return PullAnswer{e.encoded->empty() ? nullptr : e.encoded->data(), e.encoded->size(), e.encoding, e.encoded};
}

void ServerKeyStore::answer_pulls_locked(Entry& e) {
  if (!e.ready) return;
  auto& waiting = e.waiting_pulls;
  size_t kept = 0;
  for (size_t i = 0; i < waiting.size(); ++i) {
    if (waiting[i].first <= e.applied_round) {
      waiting[i].second(nullptr, answer_locked(e));
    } else {
      waiting[kept++] = std::move(waiting[i]);
    }
  }
  waiting.resize(kept);
}

void ServerKeyStore::release_held_locked(Entry& e) {
  // Held pushes are replayed in arrival order; those still too early stay.
  std::vector<HeldPush> held;
  held.swap(e.held);
  for (HeldPush& h : held) {
    if (!e.ready || (mode() == Mode::kSync && h.round > e.applied_round + 1)) {
      e.held.push_back(std::move(h));
      continue;
    }
    try {
      push_locked(e, h.worker, h.round, h.bytes.data(), h.done, h.numbers);
    } catch (const Error& error) {
      h.done(&error);
    }
  }
}

void ServerKeyStore::check_part(const PartInfo& info, const char* op) const {
  Entry& e = find(info, op);
  std::lock_guard<std::mutex> lock(e.mutex);
  check(e, info, e.bytes, op);
}

void ServerKeyStore::pull(const PartInfo& info, int64_t round, PullDone done) {
  throw_if_failed();
  Entry& e = find(info, "pull");
  std::lock_guard<std::mutex> lock(e.mutex);
  check(e, info, e.bytes, "pull");
  if (e.adopted && !e.ready) {
    // Pulls come here only once the holders this copy was being filled
    // from are gone: the part is lost.
    throw Error(ErrorCode::kPeerLost, "pull: " + part_name(info.part) +
                                          " is a new copy on this server that was still being filled when the "
                                          "servers holding the part were lost");
  }
  const int64_t wanted = mode() == Mode::kSync ? round : 0;
  if (wanted > e.applied_round + kRoundWindow) {
    throw Error(ErrorCode::kBadState, "pull of key " + std::to_string(info.part.key) + " round " +
                                          std::to_string(wanted) + " while round " +
                                          std::to_string(e.applied_round) + " is the last applied (rule: at most " +
                                          std::to_string(kRoundWindow) + " rounds ahead)");
  }
  if (e.ready && wanted <= e.applied_round) {
    done(nullptr, answer_locked(e));
    return;
  }
  e.waiting_pulls.emplace_back(wanted, std::move(done));
}

void ServerKeyStore::set_optimizer(const optim::OptimizerConfig& config) {
  auto created = optim::Optimizer::create(config);
  {
    std::lock_guard<std::mutex> lock(optimizer_mutex_);
    if (optimizer_ && optimizer_->config() == config) return;
    optimizer_ = std::move(created);
  }
  // What parts hold from now on are weights, never sent encoded: no
  // encoding of an earlier round answers a pull after this returns (a
  // round applying now sees the optimizer, or had encoded before this
  // clears it).
  std::shared_lock<std::shared_mutex> map_lock(entries_mutex_);
  for (const auto& [id, entry] : entries_) {
    std::lock_guard<std::mutex> lock(entry->mutex);
    entry->encoded.reset();
    entry->encoding = 0;
  }
}

bool ServerKeyStore::has_optimizer() const { return optimizer() != nullptr; }

void ServerKeyStore::set_compression(const compression::CompressionConfig& config) {
  std::shared_ptr<const compression::GradientCodec> codec;
  if (compression::is_lossy(config.mode)) codec = std::make_shared<const compression::GradientCodec>(config);
  std::lock_guard<std::mutex> lock(optimizer_mutex_);
  codec_ = std::move(codec);
}

bool ServerKeyStore::pulls_may_be_encoded() const {
  return mode_.load() == static_cast<int>(Mode::kSync) && codec() != nullptr && optimizer() == nullptr;
}

const std::vector<float>* ServerKeyStore::pull_residual(uint64_t key, int64_t begin) const {
  return pull_feedback_.residual(key, begin);
}

void ServerKeyStore::set_learning_rate(double lr) {
  auto opt = optimizer();
  if (!opt) throw Error(ErrorCode::kBadState, "set_learning_rate: the server has no optimizer");
  opt->set_learning_rate(lr);
}

void ServerKeyStore::set_rescale_grad(double rescale) {
  auto opt = optimizer();
  if (!opt) throw Error(ErrorCode::kBadState, "set_rescale_grad: the server has no optimizer");
  opt->set_rescale_grad(rescale);
}

double ServerKeyStore::learning_rate() const {
  auto opt = optimizer();
  if (!opt) throw Error(ErrorCode::kBadState, "learning_rate: the server has no optimizer");
  return opt->base_learning_rate();
}

double ServerKeyStore::rescale_grad() const {
  auto opt = optimizer();
  if (!opt) throw Error(ErrorCode::kBadState, "rescale_grad: the server has no optimizer");
  return opt->rescale_grad();
}

core::NamedArrays ServerKeyStore::optimizer_state() const {
  auto opt = optimizer();
  if (!opt) return {};
  std::shared_lock<std::shared_mutex> map_lock(entries_mutex_);
  // Optimizer::state must not overlap an update: hold every part (always in
  // map order; no other path holds two parts at once).
  std::vector<std::unique_lock<std::mutex>> locks;
  std::map<std::string, const PartKey*> by_optimizer_key;
  for (const auto& [id, entry] : entries_) {
    locks.emplace_back(entry->mutex);
    by_optimizer_key.emplace(std::to_string(entry->optimizer_key), &entry->info.part);
  }
  core::NamedArrays out;
  for (const auto& [name, array] : opt->state("")) {
    NDArray copy = NDArray::empty(cpu_, array.dtype(), array.shape());
    copy.copy_from(array);
    const size_t dot = name.find('.');
    if (dot == std::string::npos) {
      out.emplace_back(name, copy);
      continue;
    }
    const PartKey* part = by_optimizer_key.at(name.substr(0, dot));
    out.emplace_back(std::to_string(part->key) + "/" + std::to_string(part->begin) + "/" +
                         std::to_string(part->end) + name.substr(dot),
                     copy);
  }
  return out;
}

void ServerKeyStore::load_optimizer_state(const core::NamedArrays& arrays) {
  auto opt = optimizer();
  if (!opt) throw Error(ErrorCode::kBadState, "load_optimizer_state: the server has no optimizer");
  std::shared_lock<std::shared_mutex> map_lock(entries_mutex_);
  // The optimizer knows parts by their optimizer keys: translate
  // "<key>/<begin>/<end>.<slot>" back.
  core::NamedArrays translated;
  for (const auto& [name, array] : arrays) {
    const size_t dot = name.find('.');
    if (dot == std::string::npos) {
      translated.emplace_back(name, array);
      continue;
    }
    const std::string part = name.substr(0, dot);
    const size_t slash1 = part.find('/');
    const size_t slash2 = slash1 == std::string::npos ? std::string::npos : part.find('/', slash1 + 1);
    uint64_t key = 0;
    int64_t begin = 0, end = 0;
    try {
      if (slash2 == std::string::npos) throw std::invalid_argument(name);
      key = std::stoull(part.substr(0, slash1));
      begin = std::stoll(part.substr(slash1 + 1, slash2 - slash1 - 1));
      end = std::stoll(part.substr(slash2 + 1));
    } catch (const std::exception&) {
      throw Error(ErrorCode::kInvalidArgument, "load_optimizer_state: '" + name +
                                                   "' is not <key>/<begin>/<end>.<slot>, num_update or learning_rate");
    }
    auto it = entries_.find({key, begin});
    if (it == entries_.end() || it->second->info.part.end != end) {
      throw Error(ErrorCode::kNotFound, "load_optimizer_state: " + part_name(PartKey{key, begin, end}) +
                                            " is not held by this server");
    }
    translated.emplace_back(std::to_string(it->second->optimizer_key) + name.substr(dot), array);
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
  check(e, info, e.bytes, "push");
  if (e.ready) return e;  // a part this server holds, or a copy filled already
  const bool initialised =
      std::find(e.inited_by.begin(), e.inited_by.end(), true) != e.inited_by.end();
  if (!e.adopted && initialised) return e;  // a part of this server's, waiting for rank 0's init
  e.adopted = true;
  if (e.adopt_source < 0) {
    // Created just now, or started again after a failed fill.
    e.adopt_source = source;
    e.adopt_round.assign(static_cast<size_t>(num_workers_), 0);
    e.fill_requested = false;
  } else if (e.adopt_source != source) {
    throw Error(ErrorCode::kBadState, "worker " + std::to_string(worker) + " gave " + part_name(p) +
                                          " server " + std::to_string(source) + " as its source, another worker server " +
                                          std::to_string(e.adopt_source));
  }
  const size_t w = static_cast<size_t>(worker);
  if (e.adopt_round[w] == 0) {
    // Its rounds here start with this push. Another worker may have begun
    // many rounds earlier (it heard of the copy a heartbeat sooner): it
    // keeps only the pushes the fill may need (keep_needed_held_locked).
    e.adopt_round[w] = round;
    e.pushed_round[w] = round - 1;
  }
  return e;
}

void ServerKeyStore::keep_needed_held_locked(Entry& e, int worker, int64_t round) {
  // Every other worker has pushed round - (kRoundWindow + 1) to the part's
  // other holder at least: this worker could not have pushed `round` there
  // otherwise (a push of round r needs round r - 1 - kRoundWindow applied).
  // So their first pushes here will be of that round or later, and the
  // fill's state will hold every round before it: this worker's held
  // pushes of those rounds are never needed, and its rounds here start at
  // the first one kept.
  // Not while a fill is asked for: its state's round was fixed by the first
  // pushes as they were.
  if (e.fill_requested) return;
  const int64_t oldest_needed = round - kRoundWindow - 1;
  const size_t w = static_cast<size_t>(worker);
  if (e.adopt_round[w] >= oldest_needed) return;
  e.held.erase(std::remove_if(e.held.begin(), e.held.end(),
                              [&](const HeldPush& h) { return h.worker == worker && h.round < oldest_needed; }),
               e.held.end());
  e.adopt_round[w] = oldest_needed;
}

void ServerKeyStore::request_fill_locked(Entry& e) {
  if (e.fill_requested || e.adopt_source < 0) return;
  int64_t latest = 0;
  for (int w = 0; w < num_workers_; ++w) {
    const int64_t first = e.adopt_round[static_cast<size_t>(w)];
    if (first == 0 && !departed_[static_cast<size_t>(w)]) return;
    latest = std::max(latest, first);
  }
  if (latest == 0) return;  // every worker left before pushing: nothing to fill for
  e.fill_requested = true;
  std::lock_guard<std::mutex> lock(fill_mutex_);
  if (fill_wanted_) fill_wanted_(FillRequest{e.info, e.adopt_source, latest - 1});
}

void ServerKeyStore::on_fill_wanted(std::function<void(const FillRequest&)> wanted) {
  std::lock_guard<std::mutex> lock(fill_mutex_);
  fill_wanted_ = std::move(wanted);
}

ServerKeyStore::PartState ServerKeyStore::state_locked(const Entry& e) const {
  PartState state;
  state.round = e.applied_round;
  state.value = e.stored.data();
  state.bytes = e.bytes;
  if (auto opt = optimizer()) state.optimizer = opt->key_state(e.optimizer_key);
  if (const auto* residual = pull_feedback_.residual(e.info.part.key, e.info.part.begin)) {
    state.pull_residual = *residual;
  }
  state.encoded = e.encoded;
  state.encoding = e.encoding;
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
  check(e, info, e.bytes, "install");
  if (e.adopt_source < 0 || !e.fill_requested || e.ready) {
    throw Error(ErrorCode::kBadState, "install: " + part_name(info.part) + " is not a new copy waiting for its state");
  }
  if (state.bytes != e.bytes || state.value == nullptr) {
    throw Error(ErrorCode::kShapeMismatch, "install: " + part_name(info.part) + " came with " +
                                               std::to_string(state.bytes) + " bytes, not the part's size");
  }
  int64_t latest = 0;
  for (int64_t first : e.adopt_round) latest = std::max(latest, first);
  if (state.round < latest - 1) {
    throw Error(ErrorCode::kBadState, "install: " + part_name(info.part) + " came at round " +
                                          std::to_string(state.round) + ", before round " + std::to_string(latest - 1));
  }
  auto opt = optimizer();
  if (!state.optimizer.empty() && !opt) {
    throw Error(ErrorCode::kBadState, "install: " + part_name(info.part) +
                                          " came with optimizer state, and this server has no optimizer");
  }
  const auto codec = this->codec();
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
  const Shape shape({info.part.end - info.part.begin});
  NDArray stored = NDArray::empty(cpu_, info.dtype, shape);
  NDArray merged = NDArray::empty(cpu_, info.dtype, shape);
  // Checked and copied before anything changes: a refused state leaves the
  // part waiting.
  if (opt) opt->load_key_state(e.optimizer_key, state.optimizer);
  std::memcpy(stored.data(), state.value, e.bytes);
  if (!state.pull_residual.empty()) {
    pull_feedback_.restore(info.part.key, info.part.begin, state.pull_residual.data(), n);
  }
  e.encoded = state.encoded;
  e.encoding = state.encoding;
  if (compressed && !e.compression_counted) {
    // As encode_locked counts a part's residual and encoding.
    e.compression_counted = true;
    compression_bytes_ += (codec->config().error_feedback ? e.bytes : 0) + codec->max_encoded_size(n);
  }
  e.stored = std::move(stored);
  e.merged = std::move(merged);
  e.applied_round = state.round;
  e.summed = 0;
  e.terms = 0;
  // Pushes of the rounds the state holds already are answered; each
  // worker's rounds go on after the last it pushed here (or after the
  // state's round).
  std::vector<HeldPush> held;
  held.swap(e.held);
  for (HeldPush& h : held) {
    if (h.round <= state.round) {
      h.done(nullptr);
      continue;
    }
    e.held.push_back(std::move(h));
  }
  // Each worker's rounds go on after the last it pushed here; pushes of
  // rounds the state holds that are still on their way are answered when
  // they come (filled_round), never counted.
  e.filled_round = state.round;
  for (int w = 0; w < num_workers_; ++w) {
    // A worker that left before its first push here is absent from every
    // round after the state's.
    for (auto& gap : e.absent[static_cast<size_t>(w)]) {
      if (gap.first <= state.round) gap.first = state.round + 1;
    }
  }
  e.adopt_source = -1;
  e.adopt_round.clear();
  e.fill_requested = false;
  e.ready = true;
  answer_pulls_locked(e);
  release_held_locked(e);
  advance_locked(e);
}

void ServerKeyStore::fail_fill(const PartInfo& info, const Error& error) {
  Entry& e = find(info, "fail fill");
  std::lock_guard<std::mutex> lock(e.mutex);
  if (e.adopt_source < 0 || e.ready) return;
  std::vector<HeldPush> held;
  held.swap(e.held);
  for (HeldPush& h : held) h.done(&error);
  for (auto& pushed : e.pushed_round) pushed = 0;
  e.adopt_source = -1;
  e.adopt_round.clear();
  e.fill_requested = false;
}

bool ServerKeyStore::filling(const PartInfo& info) const {
  Entry& e = find(info, "filling");
  std::lock_guard<std::mutex> lock(e.mutex);
  return e.adopt_source >= 0;
}

void ServerKeyStore::fail(const Error& error) {
  {
    std::lock_guard<std::mutex> lock(optimizer_mutex_);
    if (failure_) return;
    failure_ = std::make_unique<Error>(error);
  }
  std::shared_lock<std::shared_mutex> map_lock(entries_mutex_);
  for (const auto& [id, entry] : entries_) {
    std::lock_guard<std::mutex> lock(entry->mutex);
    for (HeldPush& h : entry->held) h.done(&error);
    entry->held.clear();
    for (auto& [round, done] : entry->waiting_pulls) done(&error, PullAnswer{});
    entry->waiting_pulls.clear();
  }
}

}  // namespace dt::ps
