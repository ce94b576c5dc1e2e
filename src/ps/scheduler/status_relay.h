// The scheduler's part of dtrun's live job summary when the workers and
// servers run on other hosts (dtrun --status-every with --launcher ssh, mpi
// or slurm): dtrun starts the scheduler on its own host with DT_STATUS_DIR,
// the folder it reads; the processes send their numbers with their
// heartbeats (Heartbeat.worker_status, server_status), and this writes each
// one's latest as the status file (core/status_file.h) that a process under
// --launcher local writes itself, so dtrun reads the same folder whatever
// the launcher.
//
// The numbers come from the network: a report that is not sane (a count or
// a time below zero, a time not finite or beyond a century, a byte count
// beyond 2^62, a report of the other role's kind) is dropped, named once per
// process in the log, and the file keeps the last good one.
//
// Threading: none; the caller serialises (the scheduler's lock).
#pragma once

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "core/status_line.h"
#include "ps/job/job_config.h"
#include "ps/transport/protocol_generated.h"

namespace dt::ps {

// The report's numbers, or nullopt with why set when they are not sane.
std::optional<core::WorkerStatus> read_report(const wire::WorkerStatusReport& report, std::string& why);
std::optional<core::ServerStatus> read_report(const wire::ServerStatusReport& report, std::string& why);

class StatusRelay {
 public:
  // Null unless DT_STATUS_DIR is set.
  static std::unique_ptr<StatusRelay> from_environment();
  // dir: an existing folder.
  explicit StatusRelay(std::string dir) : dir_(std::move(dir)) {}

  // A heartbeat from role's rank (a registered member): its report, if it
  // has one, replaces that process's file. False when it had one and it
  // was dropped.
  bool take(Role role, int rank, const wire::Heartbeat& heartbeat);

 private:
  void drop(Role role, int rank, const std::string& why);

  const std::string dir_;
  std::set<std::pair<Role, int>> named_;  // processes a dropped report was logged for
};

}  // namespace dt::ps
