// RequestServer's latency path (request_server.h, Quick): requests the check
// calls quick are handled on the nng thread that received them, the rest by
// the handler pool, and issue 23's rules hold on both: a slow handler of
// pool requests does not hold up quick ones, per-connection limits and the
// reply deadline apply to quick requests too, and with a job secret only a
// proven connection's requests are ever looked at.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "net/auth_handshake.h"
#include "ps/transport/frame.h"
#include "ps/transport/request_client.h"
#include "ps/transport/request_server.h"
#include "unit/ps/ps_test_util.h"

namespace dt::ps {
namespace {

using core::Error;
using core::ErrorCode;
using namespace std::chrono_literals;

using test::text_message;
using test::text_of;

// Quick: the requests whose text starts with "q".
bool starts_with_q(const Message& request) { return request.size() > 0 && request.data()[0] == 'q'; }

// Answers "q..." requests at once; holds the others until release() (or
// every request, with hold_quick), so a test can occupy the pool.
class Gate {
 public:
  explicit Gate(bool hold_quick = false) : hold_quick_(hold_quick) {}
  RequestServer::Handler handler() {
    return [this](Message request, RequestServer::Reply reply) {
      const std::string text = text_of(request);
      if (text[0] == 'q' && !hold_quick_) {
        reply(text_message("echo:" + text));
        return;
      }
      std::unique_lock<std::mutex> lock(mutex_);
      ++held_;
      cv_.notify_all();
      if (text[0] == 'q') {
        kept_.push_back(std::move(reply));  // answered by the deadline, or never
        return;
      }
      cv_.wait_for(lock, 20s, [this] { return released_; });
      lock.unlock();
      reply(text_message("echo:" + text));
    };
  }
  bool wait_held(int n) {
    std::unique_lock<std::mutex> lock(mutex_);
    return cv_.wait_for(lock, 10s, [&] { return held_ >= n; });
  }
  void release() {
    std::lock_guard<std::mutex> lock(mutex_);
    released_ = true;
    cv_.notify_all();
  }

 private:
  const bool hold_quick_;
  std::mutex mutex_;
  std::condition_variable cv_;
  int held_ = 0;
  bool released_ = false;
  std::vector<RequestServer::Reply> kept_;
};

class QuickRequests : public ::testing::TestWithParam<std::string> {
 protected:
  std::string url() const { return test::unique_url(GetParam()); }
};

TEST_P(QuickRequests, QuickOnesAreHandledWhereReceivedTheRestByThePool) {
  Gate gate;
  gate.release();
  RequestServer server({url()}, 2, gate.handler(), 1 << 20, nullptr, ConnectionPolicy(), net::TransportSecurity(),
                       starts_with_q);
  RequestClient client(server.bound_urls().front(), 5s);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(text_of(client.call(text_message("q" + std::to_string(i)), 5s)), "echo:q" + std::to_string(i));
  EXPECT_EQ(text_of(client.call(text_message("slow"), 5s)), "echo:slow");
  const RequestServer::Handled handled = server.handled();
  EXPECT_EQ(handled.on_receipt, 3u);
  EXPECT_EQ(handled.by_pool, 1u);
}

TEST_P(QuickRequests, WithoutACheckThePoolHandlesEverything) {
  Gate gate;
  gate.release();
  RequestServer server({url()}, 2, gate.handler(), 1 << 20);
  RequestClient client(server.bound_urls().front(), 5s);
  EXPECT_EQ(text_of(client.call(text_message("q"), 5s)), "echo:q");
  EXPECT_EQ(server.handled().on_receipt, 0u);
  EXPECT_EQ(server.handled().by_pool, 1u);
}

TEST_P(QuickRequests, ABusyPoolDoesNotHoldUpQuickRequests) {
  Gate gate;
  // Two receivers: two pool threads, both kept busy by slow requests.
  RequestServer server({url()}, 2, gate.handler(), 1 << 20, nullptr, ConnectionPolicy(), net::TransportSecurity(),
                       starts_with_q);
  RequestClient client(server.bound_urls().front(), 5s);
  std::atomic<int> slow_answered{0};
  for (int i = 0; i < 2; ++i) {
    client.request(text_message("slow"), 20s, [&](std::optional<Error> error, Message) {
      if (!error) ++slow_answered;
    });
  }
  ASSERT_TRUE(gate.wait_held(2));
  for (int i = 0; i < 5; ++i) EXPECT_EQ(text_of(client.call(text_message("q"), 5s)), "echo:q");
  EXPECT_EQ(slow_answered.load(), 0);
  gate.release();
  for (int i = 0; i < 1000 && slow_answered.load() < 2; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(slow_answered.load(), 2);
}

TEST_P(QuickRequests, HeldQuickRequestsKeepThePerConnectionLimitAndTheDeadline) {
  Gate gate(/*hold_quick=*/true);
  ConnectionPolicy policy;
  policy.per_connection = 2;
  policy.reply_deadline_s = 0.3;
  RequestServer server({url()}, 2, gate.handler(), 1 << 20, nullptr, policy, net::TransportSecurity(), starts_with_q);
  RequestClient client(server.bound_urls().front(), 5s);
  std::mutex mutex;
  std::vector<std::string> answers;
  for (int i = 0; i < 3; ++i) {
    client.request(text_message("q" + std::to_string(i)), 10s, [&](std::optional<Error> error, Message reply) {
      std::string what;
      try {
        if (error) throw *error;
        Frame::parse(std::move(reply)).expect<wire::Ack>();
        what = "ack";
      } catch (const Error& e) {
        what = e.what();
      }
      std::lock_guard<std::mutex> lock(mutex);
      answers.push_back(what);
    });
  }
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 1000; ++i) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (answers.size() == 3) break;
    }
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  std::lock_guard<std::mutex> lock(mutex);
  ASSERT_EQ(answers.size(), 3u);
  int refused = 0, timed_out = 0;
  for (const std::string& a : answers) {
    if (a.find("per connection") != std::string::npos) ++refused;
    if (a.find("reply deadline") != std::string::npos) ++timed_out;
  }
  EXPECT_EQ(refused, 1) << answers[0] << " | " << answers[1] << " | " << answers[2];
  EXPECT_EQ(timed_out, 2) << answers[0] << " | " << answers[1] << " | " << answers[2];
  EXPECT_EQ(server.handled().on_receipt, 3u);
}

INSTANTIATE_TEST_SUITE_P(Transports, QuickRequests, ::testing::Values("inproc", "ipc", "tcp"));

TEST(QuickRequestsWithASecret, OnlyProvenConnectionsAreLookedAt) {
  net::TransportSecurity security;
  net::JobSecret secret{};
  secret.fill(0x3c);
  security.secret = secret;
  std::mutex mutex;
  int handshakes_seen = 0;
  int looked_at = 0;
  const RequestServer::Quick quick = [&](const Message& request) {
    std::lock_guard<std::mutex> lock(mutex);
    ++looked_at;
    if (net::is_handshake(request.data(), request.size())) ++handshakes_seen;
    return starts_with_q(request);
  };
  Gate gate;
  gate.release();
  RequestServer server({"tcp://127.0.0.1:0"}, 2, gate.handler(), 1 << 20, nullptr, ConnectionPolicy(), security, quick);
  RequestClient client(server.bound_urls().front(), 5s, kDefaultMaxMessageBytes, security);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(text_of(client.call(text_message("q"), 5s)), "echo:q");
  // A node without the secret is refused by the pool, never looked at.
  RequestClient stranger(server.bound_urls().front(), 5s);
  EXPECT_THROW(stranger.call(text_message("q"), 5s), Error);
  std::lock_guard<std::mutex> lock(mutex);
  EXPECT_EQ(handshakes_seen, 0);
  EXPECT_EQ(looked_at, 3);
  EXPECT_EQ(server.handled().on_receipt, 3u);
}

}  // namespace
}  // namespace dt::ps
