#include "ps/server/resent_requests.h"

#include "ps/transport/superseded_reply.h"

namespace dt::ps {

RequestServer::Reply ResentRequests::track(const Identity& id, RequestServer::Reply reply) {
  auto shared = std::make_shared<RequestServer::Reply>(std::move(reply));
  std::shared_ptr<RequestServer::Reply> superseded;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    auto& slot = state_->waiting[id];
    superseded = std::move(slot);
    slot = shared;
  }
  if (superseded) {
    // Its requester has moved on to the resend; this frees the place. (If
    // the copies were handled out of order and this is the one it waits
    // for, the requester sends again.)
    (*superseded)(superseded_reply());
  }
  std::weak_ptr<State> weak = state_;
  return [weak, id, shared](Message message) {
    if (auto state = weak.lock()) {
      std::lock_guard<std::mutex> lock(state->mutex);
      auto it = state->waiting.find(id);
      if (it != state->waiting.end() && it->second == shared) state->waiting.erase(it);
    }
    (*shared)(std::move(message));
  };
}

size_t ResentRequests::waiting() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->waiting.size();
}

}  // namespace dt::ps
