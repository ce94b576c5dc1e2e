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

int SpeakerBinding::server(int rank, uint32_t pipe, const char* what) {
  if (rank < 0) {
    throw Error(ErrorCode::kProtocol, std::string(what) + " in the name of server " + std::to_string(rank) +
                                          " (rule: servers ask for it, in their own name)");
  }
  check(-1 - rank, pipe);
  return rank;
}

void SpeakerBinding::connection_closed(uint32_t pipe) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = speaker_of_pipe_.find(pipe);
  if (it == speaker_of_pipe_.end()) return;
  pipe_of_speaker_.erase(it->second);
  speaker_of_pipe_.erase(it);
}

}  // namespace dt::ps
