#include "kvstore/server_exchange.h"

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

namespace dt::kvstore {

using core::Error;
using core::ErrorCode;

namespace {

// How often a wait for the verdict looks for it.
constexpr auto kVerdictPoll = std::chrono::milliseconds(20);

}  // namespace

void ServerExchange::run(const std::function<ps::Message(int server)>& request,
                         const std::function<void(int server, const ps::Frame& reply)>& on_reply) const {
  std::vector<int> servers;  // the ones still to answer
  for (int s = 0; s < client_.num_servers(); ++s) {
    if (scheduler_.server_alive(s)) servers.push_back(s);
  }
  for (;;) {
    const auto answered = std::make_unique<std::atomic<bool>[]>(servers.size());
    std::vector<int> lost_before;
    for (int s : servers) lost_before.push_back(scheduler_.times_lost(s));
    try {
      ps::WorkerClient::Exchange exchange(client_, [&](size_t index, const ps::Frame& reply) {
        on_reply(servers[index], reply);
        answered[index] = true;
      });
      for (size_t i = 0; i < servers.size(); ++i) exchange.send(servers[i], request(servers[i]));
      exchange.wait();
      return;
    } catch (const Error& e) {
      if (!scheduler_.replicated() || !lost_server_among(servers, lost_before, e)) throw;
    }
    // A server was lost meanwhile: again, to the others that did not answer.
    std::vector<int> left;
    for (size_t i = 0; i < servers.size(); ++i) {
      if (!answered[i] && scheduler_.server_alive(servers[i])) left.push_back(servers[i]);
    }
    if (left.empty()) return;
    servers.swap(left);
  }
}

bool ServerExchange::lost_server_among(const std::vector<int>& servers, const std::vector<int>& lost_before,
                                       const Error& error) const {
  if (error.code() != ErrorCode::kNetwork && error.code() != ErrorCode::kTimedOut &&
      error.code() != ErrorCode::kClosed && error.code() != ErrorCode::kPeerLost) {
    return false;
  }
  const auto verdict = std::chrono::steady_clock::now() + verdict_wait_;
  for (;;) {
    if (auto failure = client_.failure()) throw *failure;
    for (size_t i = 0; i < servers.size(); ++i) {
      if (scheduler_.times_lost(servers[i]) > lost_before[i]) return true;
    }
    if (std::chrono::steady_clock::now() >= verdict) return false;
    std::this_thread::sleep_for(kVerdictPoll);
  }
}

}  // namespace dt::kvstore
