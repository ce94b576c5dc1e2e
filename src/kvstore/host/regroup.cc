#include "kvstore/host/regroup.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <utility>

#include "core/error.h"
#include "core/log.h"

namespace dt::kvstore {

using collective::host::HostCommunicator;
using core::Error;
using core::ErrorCode;
using Clock = std::chrono::steady_clock;

namespace {

constexpr size_t kProgressBytes = 16;

}  // namespace

Regroup::Regroup(ps::ClusterMember& member, const ps::PsOptions& options,
                 collective::host::HostCommunicatorOptions comm_options, GroupMembership& group, StepRecord& steps)
    : member_(member), options_(options), comm_options_(std::move(comm_options)), group_(group), steps_(steps) {}

std::vector<ps::LostNode> Regroup::worker_departures() const {
  std::vector<ps::LostNode> workers;
  for (const ps::LostNode& l : member_.departed()) {
    if (l.role == ps::Role::kWorker) workers.push_back(l);
  }
  return workers;
}

bool Regroup::pending() const {
  const size_t departed = worker_departures().size();
  std::lock_guard<std::mutex> lock(group_.mutex);
  // A joined worker not let in yet has no group to regroup.
  return !group_.closed && group_.comm && departed > group_.departures_seen;
}

bool Regroup::wait_for_departure(uint64_t beyond) const {
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
      std::lock_guard<std::mutex> lock(group_.mutex);
      if (group_.closed) return false;
    }
    if (worker_departures().size() > beyond) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

bool Regroup::over_survivors(void* data, size_t bytes, bool in_step) {
  const auto deadline = Clock::now() + std::chrono::duration<double>(options_.request_timeout_s);
  for (;;) {
    const uint64_t departures = worker_departures().size();
    try {
      return try_once(data, bytes, in_step);
    } catch (const Error& e) {
      // A worker lost during the regroup, or one the scheduler counted
      // before this worker heard of it: again, over the workers then left.
      const bool another_loss = e.code() == ErrorCode::kBadState || e.code() == ErrorCode::kTimedOut ||
                                e.code() == ErrorCode::kPeerLost || e.code() == ErrorCode::kNetwork;
      if (!another_loss || Clock::now() > deadline || !wait_for_departure(departures)) throw;
    }
  }
}

bool Regroup::try_once(void* data, size_t bytes, bool in_step) {
  // The group's members less the workers departed since it formed.
  const std::vector<ps::LostNode> departures = worker_departures();
  std::vector<int> survivors, departed;
  uint64_t generation = 0;
  size_t departures_known = 0;
  {
    std::lock_guard<std::mutex> lock(group_.mutex);
    departures_known = std::max<size_t>(departures.size(), group_.departures_seen);
    for (size_t i = group_.departures_seen; i < departures.size(); ++i) departed.push_back(departures[i].rank);
    generation = group_.generation + (departures_known - group_.departures_seen);
    for (int r : group_.workers) {
      if (std::find(departed.begin(), departed.end(), r) == departed.end()) survivors.push_back(r);
    }
  }
  const int me = member_.rank();
  const auto mine_at = std::find(survivors.begin(), survivors.end(), me);
  if (mine_at == survivors.end()) {
    throw Error(ErrorCode::kPeerLost, "allreduce: the job went on without worker " + std::to_string(me) +
                                          " (the scheduler declared it lost)");
  }
  const int new_rank = static_cast<int>(mine_at - survivors.begin());
  const int size = static_cast<int>(survivors.size());

  // The old links close first, so that a survivor still blocked on this
  // worker fails at once and comes to the regroup too.
  std::shared_ptr<HostCommunicator> old = group_.current();
  if (old) old->abort("worker " + std::to_string(me) + " regroups after the loss of worker(s) " + ranks_text(departed));

  std::vector<Progress> progress(survivors.size());
  progress[static_cast<size_t>(new_rank)] = Progress{steps_.done, steps_.last_result.size()};
  const auto exchange = [&](const std::vector<uint8_t>& mesh_address) {
    std::vector<uint8_t> blob;
    put_u64(blob, steps_.done);
    put_u64(blob, steps_.last_result.size());
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
    std::lock_guard<std::mutex> lock(group_.mutex);
    if (old) group_.traffic_before += old->traffic();
    group_.comm = fresh;
    group_.workers = survivors;
    group_.generation = generation;
    group_.departures_seen = departures_known;
    const auto departed_since = [&](int r) {
      return std::find(survivors.begin(), survivors.end(), r) == survivors.end();
    };
    std::vector<int>& joined = group_.joined;
    joined.erase(std::remove_if(joined.begin(), joined.end(), departed_since), joined.end());
    if (group_.closed) group_.comm->abort(group_.closed_why);
  }

  std::string settled = "no step to settle";
  const bool took_result = settle(*fresh, survivors, progress, data, bytes, in_step, settled);
  if (departed.empty()) {
    core::logf(core::LogLevel::kInfo, "allreduce", "worker %d connected with workers %s", me,
               ranks_text(survivors).c_str());
  } else {
    core::logf(core::LogLevel::kInfo, "allreduce",
               "worker %d regrouped with workers %s after the loss of worker(s) %s: %s", me,
               ranks_text(survivors).c_str(), ranks_text(departed).c_str(), settled.c_str());
  }
  return took_result;
}

bool Regroup::settle(HostCommunicator& fresh, const std::vector<int>& survivors, const std::vector<Progress>& progress,
                     void* data, size_t bytes, bool in_step, std::string& settled) {
  const int me = member_.rank();
  uint64_t most = 0, least = UINT64_MAX;
  size_t ahead = 0;
  for (size_t i = 0; i < progress.size(); ++i) {
    if (progress[i].steps_done > most) {
      most = progress[i].steps_done;
      ahead = i;
    }
    least = std::min(least, progress[i].steps_done);
  }
  if (most > least + 1) {
    throw Error(ErrorCode::kInternal, "allreduce: after the regroup the workers have finished " +
                                          std::to_string(least) + " to " + std::to_string(most) +
                                          " steps (they can differ by one at most)");
  }
  bool took_result = false;
  if (most == least + 1) {
    // Every survivor read the same records, so all skip an empty result
    // (a step whose result each worker holds once it finished) alike.
    const size_t result_bytes = progress[ahead].result_bytes;
    if (steps_.done == most) {
      if (steps_.last_result.size() != result_bytes) {
        throw Error(ErrorCode::kInternal, "allreduce: worker " + std::to_string(me) + " kept " +
                                              std::to_string(steps_.last_result.size()) + " bytes of step " +
                                              std::to_string(most) + ", worker " +
                                              std::to_string(survivors[ahead]) + " " + std::to_string(result_bytes));
      }
      if (result_bytes > 0) fresh.broadcast(steps_.last_result.data(), result_bytes, static_cast<int>(ahead));
    } else {
      if (!in_step || result_bytes != bytes) {
        throw Error(ErrorCode::kInternal, "allreduce: worker " + std::to_string(me) + " is one step behind after "
                                              "the regroup but not in that step (" + std::to_string(bytes) +
                                              " bytes here, " + std::to_string(result_bytes) + " there)");
      }
      if (bytes > 0) fresh.broadcast(data, bytes, static_cast<int>(ahead));
      took_result = true;
    }
    settled = "step " + std::to_string(most) + " taken from worker " + std::to_string(survivors[ahead]) +
              ", which finished it";
  } else if (in_step) {
    settled = "step " + std::to_string(steps_.done + 1) + " runs again without the lost worker(s)";
  }
  return took_result;
}

}  // namespace dt::kvstore
