// ServerKeyStore's entry per part, shared by the files that implement the
// store (key_store.cc, key_store_waits.cc); nothing else includes it.
#pragma once

#include <memory>
#include <mutex>
#include <utility>

#include "ps/server/key_store.h"

namespace dt::ps {

// One part: its rounds, and their companions for departures and joins and
// for new copies. The lock guards all three.
struct ServerKeyStore::Entry {
  Entry(const PartInfo& info, uint64_t optimizer_key, int num_workers, RoundRules& rules, const WorkerRoster& roster,
        std::shared_ptr<core::Context> cpu, ops::cpu::ReductionPool& reduction)
      : attendance(roster), rounds(info, optimizer_key, num_workers, rules, attendance, std::move(cpu), reduction) {}
  std::mutex mutex;
  PartAttendance attendance;
  PartRounds rounds;
  NewCopy copy;
};

}  // namespace dt::ps
