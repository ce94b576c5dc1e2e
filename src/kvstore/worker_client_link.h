// The RequestScheduler's link over a worker's real connections: each call
// goes to the ps::WorkerClient as it is (RequestScheduler::link_to). Tests
// link the scheduler to fake servers instead. Threading: the client's.
#pragma once

#include "kvstore/request_scheduler.h"

namespace dt::kvstore {

class WorkerClientLink final : public RequestScheduler::Link {
 public:
  // client outlives the link.
  explicit WorkerClientLink(ps::WorkerClient& client) : client_(client) {}
  int num_servers() const override { return client_.num_servers(); }
  void send(int server, ps::Message request, ps::WorkerClient::Done done, bool may_resend) override {
    client_.send(server, std::move(request), std::move(done), may_resend);
  }
  bool resends() const override { return client_.resends(); }
  std::optional<core::Error> failure() const override { return client_.failure(); }
  void fail(const core::Error& error) override { client_.fail(error); }
  void drop_server(int server) override { client_.drop_server(server); }
  void reconnect_server(const ps::NodeInfo& server) override { client_.reconnect_server(server); }

 private:
  ps::WorkerClient& client_;
};

}  // namespace dt::kvstore
