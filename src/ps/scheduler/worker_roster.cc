#include "ps/scheduler/worker_roster.h"

#include <algorithm>

#include "core/log.h"
#include "ps/transport/frame.h"

namespace dt::ps {

using core::Error;
using core::ErrorCode;
using core::LogLevel;

void WorkerRoster::join(const wire::Register& r, uint32_t pipe, RequestServer::Reply& reply, bool ending) {
  members_.check_layout(r);
  if (ending) throw Error(ErrorCode::kClosed, "a worker registered to join a job that is ending");
  // Its own place when it asks for one (a restarted worker keeps its
  // DMLC_WORKER_ID, and with it its data shard), else the first free one.
  Member* place = nullptr;
  for (auto& [key, m] : members_.all()) {
    if (m.info.role != Role::kWorker || (r.requested_rank() >= 0 && m.info.rank != r.requested_rank())) continue;
    if (m.state() == MemberState::kLost) {
      place = &m;
      break;
    }
  }
  if (place == nullptr) {
    throw Error(ErrorCode::kBadState,
                r.requested_rank() >= 0
                    ? "worker " + std::to_string(r.requested_rank()) +
                          " registered after the job started, and the job has not lost worker " +
                          std::to_string(r.requested_rank()) + " (only a lost worker's place can be taken)"
                    : std::string("a worker registered after the job started, and the job has lost no worker whose "
                                  "place it could take"));
  }
  // Barriers entered already are finished without it.
  const uint64_t first_barrier = members_.next_barrier(false);
  const NodeInfo predecessor = place->info;
  NodeInfo node = place->info;
  node.host = r.host() == nullptr ? std::string() : r.host()->str();
  node.pid = r.pid();
  // A job without servers: the workers in it hold the weights, and let it
  // in at a step they agree on (an all-reduce job's HostAllreduceKVStore).
  const bool awaits = job_.num_servers == 0;
  place->take_place(node, pipe, awaits ? MemberState::kAwaitingAdmission : MemberState::kActive,
                    SchedulerClock::now());
  place->next_barrier = first_barrier;
  place->first_barrier = first_barrier;
  if (awaits) {
    core::logf(LogLevel::kInfo, "scheduler",
               "%s joined the running job in the place of %s; it waits for the %d workers in the job to let it in "
               "at their next step",
               place->info.describe().c_str(), predecessor.describe().c_str(), members_.live_workers());
  } else {
    core::logf(LogLevel::kInfo, "scheduler",
               "%s joined the running job in the place of %s; the job goes on with %d of %d workers",
               place->info.describe().c_str(), predecessor.describe().c_str(), members_.live_workers(),
               job_.num_workers);
  }
  NodeTable table = members_.table_for(place->info.rank, true);
  table.first_barrier = first_barrier;
  flatbuffers::FlatBufferBuilder fbb(1024);
  reply(make_message(fbb, write_node_table(fbb, table)));
}

void WorkerRoster::enter(const GroupCall& b, Member& m, RequestServer::Reply& reply, bool stopping) {
  if (b.admission) {
    if (b.data == nullptr) throw Error(ErrorCode::kProtocol, "admission from " + m.info.describe() + " without data");
    if (stopping) {
      throw Error(ErrorCode::kClosed, "admission of " + m.info.describe() + ": every worker in the job has finished");
    }
    // The workers in the job must all let the joined ones into the same
    // group; the joined ones learn its generation from the answer.
    if (!m.awaiting_admission() && b.generation != generation()) {
      throw Error(ErrorCode::kBadState, "admission by " + m.info.describe() + " at generation " +
                                            std::to_string(b.generation) + ", but the job is at " +
                                            std::to_string(generation()) + " (regroup first)");
    }
    gather(kRegroupBit | kAdmissionBit | generation(), b, m, reply, "entered an admission");
    return;
  }
  if (b.data == nullptr) throw Error(ErrorCode::kProtocol, "regroup from " + m.info.describe() + " without data");
  // Every worker must regroup over the same workers: one that has not heard
  // of the latest loss yet asks again once its heartbeat brings it.
  if (m.awaiting_admission()) {
    throw Error(ErrorCode::kBadState, "regroup of " + m.info.describe() +
                                          ", which waits to be let into the job (rule: a joined worker's first call "
                                          "is the admission)");
  }
  if (b.generation != generation()) {
    throw Error(ErrorCode::kBadState, "regroup of " + m.info.describe() + " at generation " +
                                          std::to_string(b.generation) + ", but the job is at " +
                                          std::to_string(generation()) + " (" + std::to_string(departed_workers()) +
                                          " workers departed, " + std::to_string(admitted_) +
                                          " let in; ask again at that count)");
  }
  gather(kRegroupBit | b.generation, b, m, reply, "regrouped");
}

void WorkerRoster::gather(uint64_t id, const GroupCall& b, Member& m, RequestServer::Reply& reply,
                          const char* what) {
  if (barriers_.waits(id, b.rank)) throw Error(ErrorCode::kBadState, m.info.describe() + " " + what + " twice at once");
  barriers_.enter(id, Waiter{b.rank, reply, std::vector<uint8_t>(b.data->begin(), b.data->end())});
}

bool WorkerRoster::ready(uint64_t id, const std::vector<Waiter>& waiters) const {
  // A regroup gathers every worker still in the job: not the ones that said
  // goodbye, which have no more collectives to run, nor the ones waiting to
  // be let in. An admission lets in the waiting workers that are there once
  // every worker in the job is; the others wait for the next.
  size_t arrived = waiters.size();
  if (is_admission(id)) {
    arrived = static_cast<size_t>(std::count_if(waiters.begin(), waiters.end(),
                                                [this](const Waiter& w) { return !waits_to_be_let_in(w.rank); }));
  }
  const size_t expected = static_cast<size_t>(std::count_if(
      members_.all().begin(), members_.all().end(), [](const auto& kv) {
        return kv.second.info.role == Role::kWorker && kv.second.state() == MemberState::kActive;
      }));
  return arrived >= expected && expected > 0;
}

uint64_t WorkerRoster::let_in(uint64_t id, const std::vector<Waiter>& waiters) {
  if (!is_admission(id)) return 0;
  // The joined workers among them are in the job from now on: they take
  // the next barrier the others enter.
  const uint64_t next_barrier = members_.next_barrier(true);
  for (const Waiter& w : waiters) {
    Member& joined = members_.all().at({static_cast<int>(Role::kWorker), w.rank});
    if (!joined.awaiting_admission()) continue;
    joined.admit();
    joined.next_barrier = joined.first_barrier = next_barrier;
    ++admitted_;
    core::logf(LogLevel::kInfo, "scheduler", "%s was let into the running job; the job goes on with %d of %d workers",
               joined.info.describe().c_str(), members_.live_workers(), job_.num_workers);
  }
  return next_barrier;
}

bool WorkerRoster::lose_unadmitted(Member& m, const std::string& reason) {
  if (!m.awaiting_admission()) return false;
  // It was never let in: the workers in the job never counted it, and its
  // place is free again for the next worker that joins.
  m.lose();
  core::logf(LogLevel::kInfo, "scheduler", "%s, which waited to be let into the job, was lost (%s)",
             m.info.describe().c_str(), reason.c_str());
  barriers_.drop(m.info.rank);
  return true;
}

bool WorkerRoster::may_depart(const Member& m) const {
  // The last worker lost ends the job whatever the policy. A job without
  // servers goes on too: its workers regroup their all-reduce over the ones
  // that remain.
  return options_.worker_loss == WorkerLossPolicy::kContinue && m.info.role == Role::kWorker &&
         members_.live_workers() > 1;
}

void WorkerRoster::departed(const Member& m, const LostNode& lost) {
  core::logf(LogLevel::kInfo, "scheduler",
             "%s; the job goes on with %d of %d workers (DT_WORKER_LOSS=continue): the data shard of worker %d is no "
             "longer trained on",
             lost.message().c_str(), members_.live_workers(), job_.num_workers, m.info.rank);
  // A regroup in progress gathers over workers that no longer are the job's:
  // its workers regroup again, at the new count.
  const std::string text = lost.message() + " during the regroup; regroup again without it";
  barriers_.fail([](uint64_t id) { return is_regroup(id); }, ErrorCode::kBadState,
                 [&text](uint64_t, const Waiter&) { return text; });
  barriers_.drop(m.info.rank);
}

void WorkerRoster::turn_away_unadmitted() {
  // Nobody is left to hand them the weights.
  for (auto& [key, m] : members_.all()) {
    if (m.state() != MemberState::kAwaitingAdmission) continue;
    m.leave();
    core::logf(LogLevel::kInfo, "scheduler",
               "%s joined too late: every worker in the job finished before letting it in",
               m.info.describe().c_str());
  }
  barriers_.fail([](uint64_t id) { return is_admission(id); }, ErrorCode::kClosed, [](uint64_t, const Waiter& w) {
    return "admission of worker " + std::to_string(w.rank) + ": every worker in the job finished before letting it in";
  });
}

uint32_t WorkerRoster::awaiting_admission() const {
  // The ones in an admission: ready for the workers in the job, which wait
  // for nobody once they come.
  uint32_t ready = 0;
  for (int rank : barriers_.ranks_at([](uint64_t id) { return is_admission(id); })) {
    ready += waits_to_be_let_in(rank) ? 1 : 0;
  }
  return ready;
}

uint64_t WorkerRoster::departed_workers() const {
  return static_cast<uint64_t>(
      std::count_if(departed_.begin(), departed_.end(), [](const LostNode& l) { return l.role == Role::kWorker; }));
}

bool WorkerRoster::waits_to_be_let_in(int rank) const {
  const auto it = members_.all().find({static_cast<int>(Role::kWorker), rank});
  return it != members_.all().end() && it->second.awaiting_admission();
}

}  // namespace dt::ps
