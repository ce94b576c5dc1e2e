// The self-pipe: SIGINT, SIGTERM, SIGHUP and SIGCHLD handlers only write the
// signal number into a non-blocking pipe (write(2) is async-signal-safe), and
// the supervisor's poll loop reads it, so every decision is made outside the
// handler. SIGPIPE is ignored: a closed stdout must not kill the supervisor
// while it still owns processes. One instance per process; the destructor
// restores the previous dispositions.
#pragma once

#include <signal.h>

#include <vector>

#include "unique_fd.h"

namespace dt::dtrun {

class SignalPipe {
 public:
  SignalPipe();
  ~SignalPipe();
  SignalPipe(const SignalPipe&) = delete;
  SignalPipe& operator=(const SignalPipe&) = delete;

  int read_fd() const { return read_.get(); }
  // The signals that arrived since the last call, in arrival order.
  std::vector<int> drain();

 private:
  UniqueFd read_;
  UniqueFd write_;
  struct sigaction old_int_ {}, old_term_ {}, old_hup_ {}, old_chld_ {}, old_pipe_ {};
};

}  // namespace dt::dtrun
