// A server's side of dtrun's live job summary (dtrun --status-every): with
// DT_STATUS_FILE set (dtrun sets it per server), a thread rewrites that
// file (core/status_file.h) every DT_STATUS_EVERY_S seconds with a
// server's status line (core/status_line.h): the requests it served, the
// bytes its transport moved, and where its time went (WorkClock); and once
// more when this ends, so dtrun's table at the end has the whole run.
//
// A companion of the server's plain path: run_server makes one only when
// the file is wanted, and the server's code sees just the clock (null when
// off). When dtrun runs the server on another host (DT_STATUS_EVERY_S
// without DT_STATUS_FILE), run_server gives server_status() below to its
// cluster member instead, whose heartbeats carry it to the scheduler.
//
// Threading: one thread of its own, sleeping on a condition variable
// between writes; the destructor stops and joins it, then writes. The
// traffic source is called on that thread and in the destructor.
#pragma once

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "core/status_file.h"
#include "core/status_line.h"
#include "core/traffic.h"
#include "ps/server/work_clock.h"

namespace dt::ps {

// A server's numbers now: clock's split and the transport's traffic.
core::ServerStatus server_status(const WorkClock& clock, const core::Traffic& traffic);

class ServerStatusFile {
 public:
  using TrafficSource = std::function<core::Traffic()>;

  // clock and what traffic reads must outlive this.
  ServerStatusFile(std::unique_ptr<core::StatusFile> file, const WorkClock& clock, TrafficSource traffic);
  ~ServerStatusFile();
  ServerStatusFile(const ServerStatusFile&) = delete;
  ServerStatusFile& operator=(const ServerStatusFile&) = delete;

  // The line as the file would get it now.
  core::ServerStatus numbers() const;

 private:
  void run();
  void write();

  std::unique_ptr<core::StatusFile> file_;
  const WorkClock& clock_;
  const TrafficSource traffic_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace dt::ps
