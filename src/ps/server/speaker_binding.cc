#include "ps/server/speaker_binding.h"

#include <string>

#include "core/error.h"

namespace dt::ps {

using core::Error;
using core::ErrorCode;

void SpeakerBinding::check(int worker, uint32_t pipe) {
  if (pipe == 0) return;
  std::lock_guard<std::mutex> lock(mutex_);
  auto by_pipe = speaker_of_pipe_.find(pipe);
  if (by_pipe != speaker_of_pipe_.end()) {
    if (by_pipe->second == worker) return;
    throw Error(ErrorCode::kProtocol, "a request in the name of worker " + std::to_string(worker) +
                                          " on the connection of worker " + std::to_string(by_pipe->second) +
                                          " (rule: a member speaks only on its own connection)");
  }
  if (pipe_of_speaker_.count(worker) != 0) {
    throw Error(ErrorCode::kProtocol, "a request in the name of worker " + std::to_string(worker) +
                                          " on a connection other than the one worker " + std::to_string(worker) +
                                          " uses (rule: a member speaks only on its own connection)");
  }
  pipe_of_speaker_[worker] = pipe;
  speaker_of_pipe_[pipe] = worker;
}

int SpeakerBinding::server(const wire::DataRequest& data, uint32_t pipe, const char* what) {
  const int speaker = data.worker_rank();
  if (speaker >= 0) {
    throw Error(ErrorCode::kProtocol, std::string(what) + " in the name of worker " + std::to_string(speaker) +
                                          " (rule: servers ask for it, as -1 - their rank)");
  }
  check(speaker, pipe);
  return -1 - speaker;
}

void SpeakerBinding::connection_closed(uint32_t pipe) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = speaker_of_pipe_.find(pipe);
  if (it == speaker_of_pipe_.end()) return;
  pipe_of_speaker_.erase(it->second);
  speaker_of_pipe_.erase(it);
}

}  // namespace dt::ps
