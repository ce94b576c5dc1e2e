#include "ps/server/part_rounds.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

#include "core/timeline/timeline.h"

namespace dt::ps {
namespace {

// A span of one part's round on the timeline; a worker's pull of the part
// carries the same key, begin and round (kvstore/lane_timeline.h).
core::timeline::Span round_span(const char* name, const PartKey& part, int64_t round, int worker = -1) {
  using core::timeline::TraceArg;
  return core::timeline::Span("server", name, TraceArg{"key", static_cast<int64_t>(part.key)},
                              TraceArg{"begin", part.begin}, TraceArg{"round", round},
                              worker < 0 ? TraceArg{} : TraceArg{"worker", worker});
}

}  // namespace

using core::DType;
using core::Error;
using core::ErrorCode;
using core::NDArray;
using core::Shape;

std::string part_name(const PartKey& p) {
  return "key " + std::to_string(p.key) + " [" + std::to_string(p.begin) + ", " + std::to_string(p.end) + ")";
}

PartRounds::PartRounds(const PartInfo& info, uint64_t optimizer_key, int num_workers, RoundRules& rules,
                       const RoundAttendance& attendance, std::shared_ptr<core::Context> cpu,
                       ops::cpu::ReductionPool& reduction)
    : info_(info),
      optimizer_key_(optimizer_key),
      bytes_(static_cast<size_t>(info.part.end - info.part.begin) * core::dtype_size(info.dtype)),
      num_workers_(num_workers),
      rules_(rules),
      attendance_(attendance),
      cpu_(std::move(cpu)),
      reduction_(reduction),
      inited_by_(static_cast<size_t>(num_workers), false),
      staged_(static_cast<size_t>(num_workers)),
      pushed_round_(static_cast<size_t>(num_workers), 0) {}

void PartRounds::check(const PartInfo& info, size_t bytes, const char* op) const {
  if (info.dtype != info_.dtype) {
    throw Error(ErrorCode::kDtypeMismatch, std::string(op) + ": " + part_name(info.part) + " holds " +
                                               core::dtype_name(info_.dtype) + ", got " +
                                               core::dtype_name(info.dtype));
  }
  // The stored shape is not told back: a peer learns what it sent was
  // wrong, not what the key holds.
  if (info.shape != info_.shape || info.part.end != info_.part.end) {
    throw Error(ErrorCode::kShapeMismatch, std::string(op) + ": " + part_name(info.part) + " of a tensor " +
                                               info.shape.to_string() + " does not match the part this server holds");
  }
  if (bytes != bytes_) {
    throw Error(ErrorCode::kShapeMismatch, std::string(op) + ": " + part_name(info.part) + " sent " +
                                               std::to_string(bytes) + " bytes, not the part's size");
  }
}

bool PartRounds::inited_by_anyone() const {
  return std::find(inited_by_.begin(), inited_by_.end(), true) != inited_by_.end();
}

void PartRounds::forget_pushes() { std::fill(pushed_round_.begin(), pushed_round_.end(), 0); }

void PartRounds::init(int worker, const void* data) {
  inited_by_[static_cast<size_t>(worker)] = true;
  if (worker != 0) return;
  const Shape shape({info_.part.end - info_.part.begin});
  stored_ = NDArray::empty(cpu_, info_.dtype, shape);
  merged_ = NDArray::empty(cpu_, info_.dtype, shape);
  std::memcpy(stored_.data(), data, bytes_);
  ready_ = true;
  answer_pulls();
  release_held();
}

void PartRounds::check_round(int worker, int64_t round, bool held_already, bool windowed) const {
  const int64_t last = last_pushed(worker);
  const std::string what =
      "worker " + std::to_string(worker) + " pushed key " + std::to_string(info_.part.key) + " round " +
      std::to_string(round);
  if (round <= last || held_already) throw Error(ErrorCode::kBadState, what + " twice");
  if (round != last + 1) throw Error(ErrorCode::kBadState, what + " after round " + std::to_string(last));
  if (windowed && round > applied_round_ + kRoundWindow) {
    throw Error(ErrorCode::kBadState, what + " while round " + std::to_string(applied_round_ + 1) +
                                          " is being summed (rule: at most " + std::to_string(kRoundWindow) +
                                          " rounds ahead)");
  }
}

bool PartRounds::must_hold(int64_t round) const {
  return !ready_ || (rules_.mode() == StoreMode::kSync && round > applied_round_ + 1);
}

void PartRounds::hold(int worker, int64_t round, const void* data, PushDone done,
                      const optim::UpdateNumbers& numbers) {
  const auto* begin = static_cast<const uint8_t*>(data);
  held_.push_back(HeldPush{worker, round, std::vector<uint8_t>(begin, begin + bytes_), std::move(done), numbers});
  if (rules_.mode() == StoreMode::kSync) pushed_round_[static_cast<size_t>(worker)] = round;
}

void PartRounds::push(int worker, int64_t round, const void* data, PushDone& done,
                      const optim::UpdateNumbers& numbers) {
  // Elements wider than the payload's alignment (nng bodies start 4 bytes
  // past an 8-byte boundary) are read from an aligned copy.
  std::vector<uint8_t> aligned;
  if (reinterpret_cast<uintptr_t>(data) % core::dtype_size(info_.dtype) != 0) {
    const auto* begin = static_cast<const uint8_t*>(data);
    aligned.assign(begin, begin + bytes_);
    data = aligned.data();
  }
  if (rules_.mode() == StoreMode::kAsync) {
    {
      const auto computing = rules_.computing();
      apply(data);
    }
    done(nullptr);
    return;
  }
  pushed_round_[static_cast<size_t>(worker)] = round;
  // This push is of the round being summed (later ones are held).
  if (worker == 0) round_numbers_ = numbers;
  {
    const auto sum = round_span("sum", info_.part, round, worker);
    const auto computing = rules_.computing();
    accumulate(worker, data);
  }
  done(nullptr);
  advance();
}

PartRounds::HeldPush* PartRounds::held_push(int worker, int64_t round) {
  HeldPush* found = nullptr;
  for (HeldPush& h : held_) {
    if (h.worker == worker && h.round == round) found = &h;
  }
  return found;
}

void PartRounds::drop_held(const std::function<bool(const HeldPush&)>& which) {
  held_.erase(std::remove_if(held_.begin(), held_.end(), which), held_.end());
}

void PartRounds::settle_held_through(int64_t round) {
  std::vector<HeldPush> held;
  held.swap(held_);
  for (HeldPush& h : held) {
    if (h.round <= round) {
      h.done(nullptr);
      continue;
    }
    held_.push_back(std::move(h));
  }
}

void PartRounds::fail_held(const Error& error) {
  std::vector<HeldPush> held;
  held.swap(held_);
  for (HeldPush& h : held) h.done(&error);
}

void PartRounds::fail(const Error& error) {
  for (HeldPush& h : held_) h.done(&error);
  held_.clear();
  for (auto& [round, done] : waiting_pulls_) done(&error, PullAnswer{});
  waiting_pulls_.clear();
}

void PartRounds::accumulate(int worker, const void* data) {
  // The rank-order sum merged = ((g0 + g1) + g2) + ..., exactly what a local
  // kvstore computes for push([g0, g1, ...]): copy the first, add the rest.
  // A push whose turn has come goes in at once; others wait in staged.
  if (worker != summed_) {
    auto& staged = staged_[static_cast<size_t>(worker)];
    staged.resize(bytes_);
    std::memcpy(staged.data(), data, bytes_);
    return;
  }
  add_term(data);
  ++summed_;
}

void PartRounds::add_term(const void* data) {
  if (terms_ == 0) {
    std::memcpy(merged_.data(), data, bytes_);
  } else {
    reduction_.add(info_.dtype, merged_.data(), merged_.data(), data, merged_.size());
  }
  ++terms_;
}

void PartRounds::advance() {
  const int64_t round = applied_round_ + 1;
  // Ranks that arrived early follow as soon as their turn comes; an absent
  // rank with no push for this round is passed over.
  while (summed_ < num_workers_) {
    const size_t rank = static_cast<size_t>(summed_);
    auto& staged = staged_[rank];
    if (!staged.empty()) {
      const auto sum = round_span("sum", info_.part, round, static_cast<int>(rank));
      const auto computing = rules_.computing();
      add_term(staged.data());
      staged.clear();  // keeps the capacity for the next round
    } else if (!attendance_.absent(static_cast<int>(rank), round)) {
      return;
    }
    ++summed_;
  }
  if (terms_ > 0) {
    complete_round();
    return;
  }
  summed_ = 0;
  // A round no worker takes part in: when every worker left for good the
  // job is ending, and nothing is applied. When some worker comes back for
  // a later round (the workers this one waited for were all lost, and
  // their successors join after it), the round is empty: it changes
  // nothing, and the rounds go on to theirs.
  if (!attendance_.someone_returns_after(round)) return;
  complete_empty_round();
  advance();
}

void PartRounds::complete_round() {
  {
    const auto update = round_span("update", info_.part, applied_round_ + 1);
    const auto computing = rules_.computing();
    apply(nullptr);
  }
  summed_ = 0;
  terms_ = 0;
  ++applied_round_;
  encode();
  {
    const auto reply = round_span("reply", info_.part, applied_round_);
    answer_pulls();
  }
  release_held();
}

void PartRounds::complete_empty_round() {
  round_numbers_ = {};
  encoded_.reset();
  encoding_ = 0;
  // Without an optimizer the stored value is the round's sum: of nothing.
  if (!rules_.optimizer()) std::memset(stored_.data(), 0, bytes_);
  ++applied_round_;
  encode();
  answer_pulls();
  release_held();
}

void PartRounds::apply(const void* single_value) {
  const optim::UpdateNumbers numbers = std::exchange(round_numbers_, {});
  encoded_.reset();  // whatever the stored value becomes, an older encoding is not it
  encoding_ = 0;
  if (single_value != nullptr) std::memcpy(merged_.data(), single_value, bytes_);
  if (auto opt = rules_.optimizer()) {
    opt->update(optimizer_key_, stored_, merged_, numbers);
    return;
  }
  std::swap(stored_, merged_);
}

void PartRounds::count_compression(const compression::GradientCodec& codec) {
  if (compression_counted_) return;
  compression_counted_ = true;
  rules_.compression_bytes() +=
      (codec.config().error_feedback ? bytes_ : 0) + codec.max_encoded_size(static_cast<size_t>(info_.part.end - info_.part.begin));
}

void PartRounds::encode() {
  const auto codec = rules_.codec();
  if (!codec || info_.dtype != DType::kFloat32 || rules_.optimizer()) return;
  const size_t n = stored_.size();
  const uint64_t key = info_.part.key;
  const int64_t begin = info_.part.begin;
  const bool feedback = codec->config().error_feedback;
  const auto compress = round_span("compress", info_.part, applied_round_);
  const auto computing = rules_.computing();
  count_compression(*codec);
  // merged is free until the next round's first push (release_held comes
  // after this): the compensated sum goes there.
  float* compensated = static_cast<float*>(merged_.data());
  std::memcpy(compensated, stored_.data(), bytes_);
  auto bytes = std::make_shared<std::vector<uint8_t>>();
  compression::ErrorFeedback& residuals = rules_.pull_feedback();
  try {
    compression::encode_with_feedback(*codec, feedback ? &residuals : nullptr, key, begin, compensated, n, *bytes);
    encoding_ = static_cast<uint8_t>(codec->config().mode);
    // Held until the next round: a threshold encoding is sized for the worst case.
    if (bytes->size() < bytes->capacity() / 2) bytes->shrink_to_fit();
  } catch (const Error&) {
    // A sum the mode cannot hold (past fp16's range, a NaN): this round goes
    // in full, what earlier rounds left out included, so nothing remains to
    // carry. Workers see what an uncompressed job would have sent them.
    const auto* raw = reinterpret_cast<const uint8_t*>(compensated);
    bytes->assign(raw, raw + bytes_);
    if (feedback) residuals.reset(key, begin, n);
    encoding_ = 0;
  }
  encoded_ = std::move(bytes);
}

PartRounds::PullAnswer PartRounds::answer() const {
  if (!encoded_) return PullAnswer{stored_.data(), bytes_, 0, nullptr};
  return PullAnswer{encoded_->empty() ? nullptr : encoded_->data(), encoded_->size(), encoding_, encoded_};
}

void PartRounds::answer_pulls() {
  if (!ready_) return;
  size_t kept = 0;
  for (size_t i = 0; i < waiting_pulls_.size(); ++i) {
    if (waiting_pulls_[i].first <= applied_round_) {
      waiting_pulls_[i].second(nullptr, answer());
    } else {
      waiting_pulls_[kept++] = std::move(waiting_pulls_[i]);
    }
  }
  waiting_pulls_.resize(kept);
}

void PartRounds::release_held() {
  // Held pushes are replayed in arrival order; those still too early stay.
  std::vector<HeldPush> held;
  held.swap(held_);
  for (HeldPush& h : held) {
    if (must_hold(h.round)) {
      held_.push_back(std::move(h));
      continue;
    }
    try {
      push(h.worker, h.round, h.bytes.data(), h.done, h.numbers);
    } catch (const Error& error) {
      h.done(&error);
    }
  }
}

void PartRounds::pull(int64_t round, PullDone done) {
  const int64_t wanted = rules_.mode() == StoreMode::kSync ? round : 0;
  if (wanted > applied_round_ + kRoundWindow) {
    throw Error(ErrorCode::kBadState, "pull of key " + std::to_string(info_.part.key) + " round " +
                                          std::to_string(wanted) + " while round " + std::to_string(applied_round_) +
                                          " is the last applied (rule: at most " + std::to_string(kRoundWindow) +
                                          " rounds ahead)");
  }
  if (ready_ && wanted <= applied_round_) {
    done(nullptr, answer());
    return;
  }
  waiting_pulls_.emplace_back(wanted, std::move(done));
}

void PartRounds::start_at(int64_t round, const void* value, std::shared_ptr<const std::vector<uint8_t>> encoded,
                          uint8_t encoding) {
  const Shape shape({info_.part.end - info_.part.begin});
  NDArray stored = NDArray::empty(cpu_, info_.dtype, shape);
  NDArray merged = NDArray::empty(cpu_, info_.dtype, shape);
  std::memcpy(stored.data(), value, bytes_);
  encoded_ = std::move(encoded);
  encoding_ = encoding;
  stored_ = std::move(stored);
  merged_ = std::move(merged);
  applied_round_ = round;
  summed_ = 0;
  terms_ = 0;
  ready_ = true;
  answer_pulls();
  release_held();
  advance();
}

void PartRounds::clear_encoding() {
  encoded_.reset();
  encoding_ = 0;
}

}  // namespace dt::ps
