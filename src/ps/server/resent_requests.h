// PS_RESEND on a server: a worker resends a request when its reply is late,
// and from then on waits for the resend's reply only (nng drops the first
// one). If the first copy is still held here (a pull waiting for its round,
// a push held for the next round), it keeps one of its connection's places
// (ConnectionPolicy::per_connection) for nothing; enough resends of held
// requests would fill them. So the first copy is answered at once, and the
// resend takes its place. Requests are identified by worker, operation and
// their first slice's key, range start and round.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>

#include "ps/transport/request_server.h"

namespace dt::ps {

class ResentRequests {
 public:
  struct Identity {
    int worker = 0;
    int op = 0;
    uint64_t key = 0;
    int64_t begin = 0;
    int64_t round = 0;
    bool operator<(const Identity& o) const {
      return std::tie(worker, op, key, begin, round) < std::tie(o.worker, o.op, o.key, o.begin, o.round);
    }
  };

  ResentRequests() : state_(std::make_shared<State>()) {}

  // reply, remembered under id until it is used; an earlier request still
  // waiting under id is answered now with superseded_reply()
  // (ps/transport/superseded_reply.h), which its worker ignores or takes as
  // "send again".
  RequestServer::Reply track(const Identity& id, RequestServer::Reply reply);
  // Requests remembered now (for tests).
  size_t waiting() const;

 private:
  struct State {
    mutable std::mutex mutex;
    std::map<Identity, std::shared_ptr<RequestServer::Reply>> waiting;
  };
  std::shared_ptr<State> state_;
};

}  // namespace dt::ps
