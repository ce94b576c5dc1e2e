#include "kvstore/host/survivor_group.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

namespace dt::kvstore {

using collective::host::HostCommunicator;
using core::Error;
using core::ErrorCode;
using Clock = std::chrono::steady_clock;

namespace {

constexpr size_t kProgressBytes = 16;

void put_u64(std::vector<uint8_t>& out, uint64_t v) {
  for (int b = 0; b < 8; ++b) out.push_back(static_cast<uint8_t>(v >> (8 * b)));
}

uint64_t get_u64(const std::vector<uint8_t>& in, size_t at) {
  uint64_t v = 0;
  for (int b = 0; b < 8; ++b) v |= static_cast<uint64_t>(in[at + static_cast<size_t>(b)]) << (8 * b);
  return v;
}

std::string ranks_text(const std::vector<int>& ranks) {
  std::string text;
  for (size_t i = 0; i < ranks.size(); ++i) text += (i ? ", " : "") + std::to_string(ranks[i]);
  return text;
}

}  // namespace

SurvivorGroup::SurvivorGroup(ps::ClusterMember& member, const ps::PsOptions& options,
                             collective::host::HostCommunicatorOptions comm_options)
    : member_(member),
      options_(options),
      comm_options_(std::move(comm_options)),
      regroups_(options.worker_loss == ps::WorkerLossPolicy::kContinue) {
  const int n = member.table().num_workers;
  for (int r = 0; r < n; ++r) workers_.push_back(r);
  ps::ClusterMember* m = &member;
  comm_ = HostCommunicator::create(
      member.rank(), n, [m](const std::vector<uint8_t>& mine) { return m->allgather(mine); }, comm_options_);
}

std::vector<int> SurvivorGroup::workers() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return workers_;
}

std::shared_ptr<HostCommunicator> SurvivorGroup::current() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return comm_;
}

core::Traffic SurvivorGroup::traffic() const {
  std::lock_guard<std::mutex> lock(mutex_);
  core::Traffic total = traffic_before_;
  total += comm_->traffic();
  return total;
}

std::vector<int> SurvivorGroup::departed_workers() const {
  std::vector<int> ranks;
  for (const ps::LostNode& l : member_.departed()) {
    if (l.role == ps::Role::kWorker && std::find(ranks.begin(), ranks.end(), l.rank) == ranks.end()) {
      ranks.push_back(l.rank);
    }
  }
  return ranks;
}

bool SurvivorGroup::regroup_pending() const {
  if (!regroups_) return false;
  const size_t departed = departed_workers().size();
  std::lock_guard<std::mutex> lock(mutex_);
  return !closed_ && departed > generation_;
}

void SurvivorGroup::on_departure(int rank, const std::string& why) {
  std::lock_guard<std::mutex> lock(mutex_);
  // The news may come after the step thread, which read the same departed
  // list, regrouped already: the new ring must not be aborted for it.
  if (!regroups_ || closed_ || std::find(workers_.begin(), workers_.end(), rank) == workers_.end()) return;
  comm_->abort(why);
}

void SurvivorGroup::abort(const std::string& why) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!closed_) {
    closed_ = true;
    closed_why_ = why;
  }
  comm_->abort(why);
}

bool SurvivorGroup::wait_for_departure(uint64_t beyond) const {
  // The scheduler declares a lost worker within its heartbeat timeout (at
  // once when the process died: its connection closes); the news then rides
  // the next heartbeat reply.
  const auto deadline = Clock::now() + std::chrono::duration<double>(options_.heartbeat_timeout_s +
                                                                     2 * options_.heartbeat_interval_s + 1);
  // A killed worker's connection to the scheduler closes as its links do:
  // ask rather than wait for the next heartbeat.
  member_.ask_for_news();
  while (Clock::now() < deadline) {
    member_.check_peers();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (closed_) return false;
    }
    if (departed_workers().size() > beyond) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

void SurvivorGroup::run_step(const Step& step, void* data, size_t bytes, bool redoable) {
  if (broken_) throw *broken_;
  auto* bytes_at = static_cast<uint8_t*>(data);
  if (regroups_ && bytes > 0) input_.assign(bytes_at, bytes_at + bytes);
  for (;;) {
    // A loss heard of between steps: regroup before this one starts.
    if (regroup_pending()) regroup_over_survivors(nullptr, 0, false);
    const std::shared_ptr<HostCommunicator> comm = current();
    try {
      step(*comm);
      break;
    } catch (const Error& e) {
      // A loss that ends the job (the scheduler, or this worker declared
      // lost) aborted the step, or left the links unusable: say that, not
      // what the aborted links said.
      member_.check_peers();
      uint64_t generation = 0;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (!regroups_ || closed_) throw;
        generation = generation_;
      }
      // Only a loss the scheduler confirms is regrouped over; any other
      // failure stands.
      if (!wait_for_departure(generation)) throw;
      // A survivor that finished the step sent its result: done as well.
      if (regroup_over_survivors(data, bytes, true)) break;
      if (!redoable) {
        throw Error(e.code(), std::string(e.what()) + " (a worker was lost in this step and no survivor finished "
                                                      "it; it cannot be run again without it: not built)");
      }
      if (bytes > 0) std::memcpy(data, input_.data(), bytes);
    }
  }
  ++steps_done_;
  if (regroups_) last_result_.assign(bytes_at, bytes_at + bytes);
}

void SurvivorGroup::regroup() {
  // Every survivor regroups once per loss: a second call for the same news
  // would wait in a regroup the others never enter.
  if (broken_ || !regroup_pending()) return;
  try {
    regroup_over_survivors(nullptr, 0, false);
  } catch (const Error& e) {
    broken_ = e;
  }
}

bool SurvivorGroup::regroup_over_survivors(void* data, size_t bytes, bool in_step) {
  const auto deadline = Clock::now() + std::chrono::duration<double>(options_.request_timeout_s);
  for (;;) {
    const uint64_t generation = departed_workers().size();
    try {
      return try_regroup(data, bytes, in_step);
    } catch (const Error& e) {
      // A worker lost during the regroup, or one the scheduler counted
      // before this worker heard of it: again, over the workers then left.
      const bool another_loss = e.code() == ErrorCode::kBadState || e.code() == ErrorCode::kTimedOut ||
                                e.code() == ErrorCode::kPeerLost || e.code() == ErrorCode::kNetwork;
      if (!another_loss || Clock::now() > deadline || !wait_for_departure(generation)) throw;
    }
  }
}

bool SurvivorGroup::try_regroup(void* data, size_t bytes, bool in_step) {
  const std::vector<int> departed = departed_workers();
  const uint64_t generation = departed.size();
  const int me = member_.rank();
  std::vector<int> survivors;
  for (int r = 0; r < member_.table().num_workers; ++r) {
    if (std::find(departed.begin(), departed.end(), r) == departed.end()) survivors.push_back(r);
  }
  const auto mine_at = std::find(survivors.begin(), survivors.end(), me);
  if (mine_at == survivors.end()) {
    throw Error(ErrorCode::kPeerLost, "allreduce: the job went on without worker " + std::to_string(me) +
                                          " (the scheduler declared it lost)");
  }
  const int new_rank = static_cast<int>(mine_at - survivors.begin());
  const int size = static_cast<int>(survivors.size());

  // The old links close first, so that a survivor still blocked on this
  // worker fails at once and comes to the regroup too.
  std::shared_ptr<HostCommunicator> old = current();
  old->abort("worker " + std::to_string(me) + " regroups after the loss of worker(s) " + ranks_text(departed));

  std::vector<Progress> progress(survivors.size());
  progress[static_cast<size_t>(new_rank)] = Progress{steps_done_, last_result_.size()};
  const auto exchange = [&](const std::vector<uint8_t>& mesh_address) {
    std::vector<uint8_t> blob;
    put_u64(blob, steps_done_);
    put_u64(blob, last_result_.size());
    blob.insert(blob.end(), mesh_address.begin(), mesh_address.end());
    const std::map<int, std::vector<uint8_t>> all = member_.regroup(generation, blob);
    std::vector<int> gathered;
    for (const auto& kv : all) gathered.push_back(kv.first);
    if (gathered != survivors) {
      throw Error(ErrorCode::kProtocol, "allreduce: the regroup gathered workers " + ranks_text(gathered) +
                                            ", worker " + std::to_string(me) + " expected " + ranks_text(survivors));
    }
    std::vector<std::vector<uint8_t>> addresses(survivors.size());
    for (size_t i = 0; i < survivors.size(); ++i) {
      const std::vector<uint8_t>& theirs = all.at(survivors[i]);
      if (theirs.size() < kProgressBytes) {
        throw Error(ErrorCode::kProtocol, "allreduce: worker " + std::to_string(survivors[i]) +
                                              " sent a malformed regroup record");
      }
      progress[i] = Progress{get_u64(theirs, 0), get_u64(theirs, 8)};
      addresses[i].assign(theirs.begin() + kProgressBytes, theirs.end());
    }
    return addresses;
  };
  std::shared_ptr<HostCommunicator> fresh = HostCommunicator::create(new_rank, size, exchange, comm_options_);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    traffic_before_ += old->traffic();
    comm_ = fresh;
    workers_ = survivors;
    generation_ = generation;
    if (closed_) comm_->abort(closed_why_);
  }

  // Settle the step the loss interrupted.
  uint64_t most = 0, least = UINT64_MAX;
  size_t ahead = 0;
  for (size_t i = 0; i < progress.size(); ++i) {
    if (progress[i].steps_done > most) {
      most = progress[i].steps_done;
      ahead = i;
    }
    least = std::min(least, progress[i].steps_done);
  }
  std::string settled = "no step to settle";
  bool took_result = false;
  if (most > least + 1) {
    throw Error(ErrorCode::kInternal, "allreduce: after the regroup the workers have finished " +
                                          std::to_string(least) + " to " + std::to_string(most) +
                                          " steps (they can differ by one at most)");
  }
  if (most == least + 1) {
    // Every survivor read the same records, so all skip an empty result
    // (a step whose result each worker holds once it finished) alike.
    const size_t result_bytes = progress[ahead].result_bytes;
    if (steps_done_ == most) {
      if (last_result_.size() != result_bytes) {
        throw Error(ErrorCode::kInternal, "allreduce: worker " + std::to_string(me) + " kept " +
                                              std::to_string(last_result_.size()) + " bytes of step " +
                                              std::to_string(most) + ", worker " +
                                              std::to_string(survivors[ahead]) + " " + std::to_string(result_bytes));
      }
      if (result_bytes > 0) fresh->broadcast(last_result_.data(), result_bytes, static_cast<int>(ahead));
    } else {
      if (!in_step || result_bytes != bytes) {
        throw Error(ErrorCode::kInternal, "allreduce: worker " + std::to_string(me) + " is one step behind after "
                                              "the regroup but not in that step (" + std::to_string(bytes) +
                                              " bytes here, " + std::to_string(result_bytes) + " there)");
      }
      if (bytes > 0) fresh->broadcast(data, bytes, static_cast<int>(ahead));
      took_result = true;
    }
    settled = "step " + std::to_string(most) + " taken from worker " + std::to_string(survivors[ahead]) +
              ", which finished it";
  } else if (in_step) {
    settled = "step " + std::to_string(steps_done_ + 1) + " runs again without the lost worker(s)";
  }
  std::fprintf(stderr, "disttrain allreduce: worker %d regrouped with workers %s after the loss of worker(s) %s: %s\n",
               me, ranks_text(survivors).c_str(), ranks_text(departed).c_str(), settled.c_str());
  return took_result;
}

}  // namespace dt::kvstore
