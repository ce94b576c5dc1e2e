#include "ps/server/server_status_file.h"

#include <utility>

namespace dt::ps {

ServerStatusFile::ServerStatusFile(std::unique_ptr<core::StatusFile> file, const WorkClock& clock,
                                   TrafficSource traffic)
    : file_(std::move(file)), clock_(clock), traffic_(std::move(traffic)) {
  thread_ = std::thread([this] { run(); });
}

ServerStatusFile::~ServerStatusFile() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
  write();
}

core::ServerStatus server_status(const WorkClock& clock, const core::Traffic& traffic) {
  const WorkClock::Split split = clock.split();
  core::ServerStatus n;
  n.requests = split.requests;
  n.traffic = traffic;
  n.compute_s = split.compute_s;
  n.communicate_s = split.communicate_s;
  n.waiting_s = split.waiting_s;
  n.wall_s = split.wall_s;
  return n;
}

core::ServerStatus ServerStatusFile::numbers() const { return server_status(clock_, traffic_()); }

void ServerStatusFile::write() { file_->write(core::format_status(numbers())); }

void ServerStatusFile::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!wake_.wait_for(lock, file_->every(), [this] { return stopping_; })) {
    lock.unlock();
    write();
    lock.lock();
  }
}

}  // namespace dt::ps
