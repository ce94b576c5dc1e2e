// A process's status file for dtrun's live job summary (dtrun
// --status-every): DT_STATUS_FILE, which dtrun sets per worker and server,
// rewritten every DT_STATUS_EVERY_S seconds with one status line
// (status_line.h) of what the process has done so far; dtrun reads the
// files into one line per interval and a table at the end. A trainer
// (train/trainer_status.h) and a server (ps/server/server_status_file.h)
// say what goes in the line; this is the file's part, the same for both.
// When the processes run on other hosts, the scheduler writes their files
// with this from their heartbeats (ps/scheduler/status_relay.h).
//
// The line is replaced atomically (written beside the file, then renamed),
// so a reader never sees half of one. The summary is an aid: a file that
// cannot be written is a debug line in the log, never a failure.
//
// Threading: one caller at a time.
#pragma once

#include <chrono>
#include <memory>
#include <string>

namespace dt::core {

class StatusFile {
 public:
  using Clock = std::chrono::steady_clock;

  // Null unless DT_STATUS_FILE is set; every_s from DT_STATUS_EVERY_S (1
  // when unset). Error(kInvalidArgument) for a malformed DT_STATUS_EVERY_S.
  // facility: the log's, for the debug lines ("trainer", "server").
  static std::unique_ptr<StatusFile> from_environment(std::string facility);
  // DT_STATUS_EVERY_S without DT_STATUS_FILE: dtrun runs this process on
  // another host (--launcher ssh, mpi, slurm), so its numbers go to the
  // scheduler with its heartbeats, which writes this file in dtrun's folder
  // (ps/scheduler/status_relay.h). Error(kInvalidArgument) as above.
  static bool relayed_from_environment();
  StatusFile(std::string path, double every_s, std::string facility);

  Clock::duration every() const { return every_; }
  // Whether DT_STATUS_EVERY_S has passed since the last write (or since
  // this was made).
  bool due(Clock::time_point now) const { return now - written_ >= every_; }
  // Replaces the file's line (given without a newline) now.
  void write(const std::string& line, Clock::time_point now = Clock::now());

 private:
  const std::string path_;
  const Clock::duration every_;
  const std::string facility_;
  Clock::time_point written_ = Clock::now();
};

}  // namespace dt::core
