// Who may speak for whom on a server's connections (issue 23): a request's
// worker_rank must be that of the connection it came on. The first request
// on a connection binds it to its rank, and a rank is bound to one open
// connection at a time (kProtocol otherwise: "a member speaks only on its
// own connection"). A server's PartState binds its connection as speaker
// -1 - its rank, apart from every worker's. Requests that arrive without a connection (pipe 0: handed in
// by a test) are not bound.
//
// Threading: any thread; one lock.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>

#include "ps/transport/protocol_generated.h"

namespace dt::ps {

class SpeakerBinding {
 public:
  // The worker the request may speak for; throws naming the rule otherwise.
  void check(int speaker, uint32_t pipe);
  // The asking server's rank, checked (>= 0) and bound to the connection
  // as speaker -1 - rank. what names the request in errors.
  int server(int rank, uint32_t pipe, const char* what);
  // A connection closed: the rank it spoke for may be taken by the
  // speaker's next connection (nng redials after a dropped one).
  void connection_closed(uint32_t pipe);

 private:
  std::mutex mutex_;  // guards what follows
  std::map<int, uint32_t> pipe_of_speaker_;
  std::map<uint32_t, int> speaker_of_pipe_;
};

}  // namespace dt::ps
