// RequestServer/RequestClient over inproc, ipc and tcp loopback.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <future>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "core/error.h"
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

RequestServer::Handler echo() {
  return [](Message request, RequestServer::Reply reply) {
    reply(text_message("echo:" + text_of(request)));
  };
}

// A server's handler that answers nothing and tells when a request has
// reached it, so that a test acts on a request known to be in flight. Must
// outlive the server.
class Unanswered {
 public:
  RequestServer::Handler handler() {
    return [this](Message, RequestServer::Reply) {
      std::lock_guard<std::mutex> lock(mutex_);
      arrived_ = true;
      cv_.notify_all();
    };
  }
  bool wait_for_arrival(std::chrono::milliseconds limit) {
    std::unique_lock<std::mutex> lock(mutex_);
    return cv_.wait_for(lock, limit, [this] { return arrived_; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool arrived_ = false;
};

class PsTransport : public ::testing::TestWithParam<std::string> {
 protected:
  std::string url() const { return test::unique_url(GetParam()); }
};

TEST_P(PsTransport, RequestReply) {
  RequestServer server({url()}, 4, echo(), 1 << 20);
  RequestClient client(server.bound_urls().front(), 5s);
  EXPECT_TRUE(client.connected());
  EXPECT_EQ(text_of(client.call(text_message("hi"), 5s)), "echo:hi");
}

TEST_P(PsTransport, HundredConcurrentRequests) {
  RequestServer server({url()}, 8, echo(), 1 << 20);
  RequestClient client(server.bound_urls().front(), 5s);
  constexpr int kRequests = 100;
  std::mutex mutex;
  std::condition_variable cv;
  int done = 0, ok = 0;
  for (int i = 0; i < kRequests; ++i) {
    client.request(text_message(std::to_string(i)), 10s, [&, i](std::optional<Error> error, Message reply) {
      std::lock_guard<std::mutex> lock(mutex);
      if (!error && text_of(reply) == "echo:" + std::to_string(i)) ++ok;
      ++done;
      cv.notify_all();
    });
  }
  std::unique_lock<std::mutex> lock(mutex);
  ASSERT_TRUE(cv.wait_for(lock, 20s, [&] { return done == kRequests; }));
  EXPECT_EQ(ok, kRequests);
}

TEST_P(PsTransport, DeferredReplyFromAnotherThread) {
  std::mutex mutex;
  std::vector<RequestServer::Reply> held;
  RequestServer server({url()}, 4,
                       [&](Message, RequestServer::Reply reply) {
                         std::lock_guard<std::mutex> lock(mutex);
                         held.push_back(std::move(reply));
                       },
                       1 << 20);
  RequestClient client(server.bound_urls().front(), 5s);
  std::promise<std::string> got;
  client.request(text_message("wait"), 10s, [&](std::optional<Error> error, Message reply) {
    got.set_value(error ? std::string("error: ") + error->what() : text_of(reply));
  });
  for (int i = 0; i < 500; ++i) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (!held.empty()) break;
    }
    std::this_thread::sleep_for(10ms);
  }
  std::thread later([&] {
    std::this_thread::sleep_for(100ms);
    std::lock_guard<std::mutex> lock(mutex);
    ASSERT_EQ(held.size(), 1u);
    held[0](text_message("later"));
    held[0](text_message("twice"));  // ignored
  });
  auto future = got.get_future();
  ASSERT_EQ(future.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(future.get(), "later");
  later.join();
}

TEST_P(PsTransport, DeadlineIsTimedOut) {
  std::mutex mutex;
  std::vector<RequestServer::Reply> held;
  RequestServer server({url()}, 2,
                       [&](Message, RequestServer::Reply reply) {
                         std::lock_guard<std::mutex> lock(mutex);
                         held.push_back(std::move(reply));
                       },
                       1 << 20);
  RequestClient client(server.bound_urls().front(), 5s);
  const auto start = std::chrono::steady_clock::now();
  try {
    client.call(text_message("never answered"), 200ms);
    FAIL() << "no timeout";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kTimedOut) << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
}

TEST_P(PsTransport, ServerGoneIsAnErrorNotAHang) {
  Unanswered unanswered;
  auto server = std::make_unique<RequestServer>(std::vector<std::string>{url()}, 2, unanswered.handler(), 1 << 20);
  RequestClient client(server->bound_urls().front(), 5s);
  std::promise<ErrorCode> got;
  client.request(text_message("x"), 5s, [&](std::optional<Error> error, Message) {
    got.set_value(error ? error->code() : ErrorCode::kInternal);
  });
  ASSERT_TRUE(unanswered.wait_for_arrival(5s));
  const auto start = std::chrono::steady_clock::now();
  server.reset();
  auto future = got.get_future();
  ASSERT_EQ(future.wait_for(10s), std::future_status::ready);
  const ErrorCode code = future.get();
  EXPECT_TRUE(code == ErrorCode::kNetwork || code == ErrorCode::kTimedOut) << static_cast<int>(code);
  // inproc/ipc/tcp all report a closed connection long before the deadline.
  EXPECT_LT(std::chrono::steady_clock::now() - start, 4s);
}

// Socket transports only: nng's inproc transport does not apply
// NNG_OPT_RECVMAXSZ (nothing is received from a wire there).
class PsSocketTransport : public PsTransport {};

TEST_P(PsSocketTransport, OversizedMessageFailsTheRequest) {
  RequestServer server({url()}, 2, echo(), 4096);
  RequestClient client(server.bound_urls().front(), 5s);
  try {
    client.call(text_message(std::string(64 * 1024, 'x')), 2s);
    FAIL() << "an oversized message was served";
  } catch (const Error& e) {
    // nng drops the connection that carried it; the request fails with it.
    EXPECT_TRUE(e.code() == ErrorCode::kNetwork || e.code() == ErrorCode::kTimedOut) << e.what();
  }
  // The connection is dropped by nng; the client reconnects and keeps working.
  for (int i = 0; i < 100; ++i) {
    try {
      EXPECT_EQ(text_of(client.call(text_message("small"), 1s)), "echo:small");
      return;
    } catch (const Error&) {
    }
  }
  FAIL() << "the server stopped serving after an oversized message";
}

TEST_P(PsTransport, CloseFailsPendingRequests) {
  Unanswered unanswered;
  RequestServer server({url()}, 2, unanswered.handler(), 1 << 20);
  RequestClient client(server.bound_urls().front(), 5s);
  std::promise<ErrorCode> got;
  client.request(text_message("x"), 10s, [&](std::optional<Error> error, Message) {
    got.set_value(error ? error->code() : ErrorCode::kInternal);
  });
  ASSERT_TRUE(unanswered.wait_for_arrival(5s));
  client.close();
  auto future = got.get_future();
  ASSERT_EQ(future.wait_for(5s), std::future_status::ready);
  EXPECT_EQ(future.get(), ErrorCode::kClosed);
  try {
    client.call(text_message("y"), 1s);
    FAIL() << "closed client sent";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kClosed);
  }
}

// A handler that keeps every reply; answers them on demand. Must outlive
// the server.
class Holder {
 public:
  RequestServer::Handler handler() {
    return [this](Message, RequestServer::Reply reply) {
      std::lock_guard<std::mutex> lock(mutex_);
      held_.push_back(std::move(reply));
      cv_.notify_all();
    };
  }
  bool wait_for(size_t count, std::chrono::milliseconds limit) {
    std::unique_lock<std::mutex> lock(mutex_);
    return cv_.wait_for(lock, limit, [&] { return held_.size() >= count; });
  }
  void answer_all() {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& reply : held_) reply(text_message("late"));
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<RequestServer::Reply> held_;
};

TEST_P(PsTransport, HeldRequestsOfOnePeerNeitherDrainTheServerNorPassItsLimit) {
  Holder holder;
  ConnectionPolicy policy;
  policy.per_connection = 5;
  // Only heartbeats are echoed; everything else is held.
  RequestServer::Handler hold = holder.handler();
  RequestServer server({url()}, 2,
                       [&](Message request, RequestServer::Reply reply) {
                         if (text_of(request) == "heartbeat") {
                           reply(text_message("alive"));
                         } else {
                           hold(std::move(request), std::move(reply));
                         }
                       },
                       1 << 20, nullptr, policy);
  // Declared before the client: its callbacks write here until the client
  // is gone (the held requests are answered at the end, on nng's threads).
  std::mutex mutex;
  // The refusal is an ErrorReply frame, as every error a server sends.
  std::vector<std::optional<Error>> refused;
  RequestClient greedy(server.bound_urls().front(), 5s);
  for (int i = 0; i < 8; ++i) {
    greedy.request(text_message("hold me"), 10s, [&](std::optional<Error> error, Message reply) {
      if (!error) {
        try {
          Frame::parse(std::move(reply)).expect<wire::Ack>();
        } catch (const Error& e) {
          error = e;
        }
      }
      std::lock_guard<std::mutex> lock(mutex);
      refused.push_back(error);
    });
  }
  ASSERT_TRUE(holder.wait_for(5, 5s));
  for (int i = 0; i < 500; ++i) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (refused.size() == 3) break;
    }
    std::this_thread::sleep_for(10ms);
  }
  {
    std::lock_guard<std::mutex> lock(mutex);
    ASSERT_EQ(refused.size(), 3u) << "requests past the per-connection limit were not answered at once";
    for (const auto& error : refused) {
      ASSERT_TRUE(error.has_value());
      EXPECT_EQ(error->code(), ErrorCode::kBadState);
      EXPECT_NE(std::string(error->what()).find("per connection"), std::string::npos) << error->what();
    }
  }
  // Five held requests on two receiving contexts: another peer is still served.
  RequestClient other(server.bound_urls().front(), 5s);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(text_of(other.call(text_message("heartbeat"), 5s)), "alive");
  // Contexts: the receivers plus at most every request once in hand (the
  // refused ones held theirs while their errors went out).
  EXPECT_LE(server.contexts(), 2u + 8u);
  holder.answer_all();
  // Every callback has run before the test's state goes away.
  for (int i = 0; i < 500; ++i) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (refused.size() == 8) break;
    }
    std::this_thread::sleep_for(10ms);
  }
  greedy.close();
}

TEST_P(PsTransport, AHeldRequestEndsAtTheReplyDeadline) {
  Holder holder;
  ConnectionPolicy policy;
  policy.reply_deadline_s = 0.3;
  RequestServer server({url()}, 2, holder.handler(), 1 << 20, nullptr, policy);
  RequestClient client(server.bound_urls().front(), 5s);
  const auto start = std::chrono::steady_clock::now();
  try {
    Frame::parse(client.call(text_message("never answered"), 10s)).expect<wire::Ack>();
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kTimedOut) << e.what();
    EXPECT_NE(std::string(e.what()).find("reply deadline"), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  // The handler's own late reply is dropped; the connection keeps working.
  holder.answer_all();
  try {
    Frame::parse(client.call(text_message("again"), 5s)).expect<wire::Ack>();
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kTimedOut) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(Transports, PsTransport, ::testing::Values("inproc", "ipc", "tcp"));
INSTANTIATE_TEST_SUITE_P(SocketTransports, PsSocketTransport, ::testing::Values("ipc", "tcp"));

TEST(PsTransportTcp, PortInUseIsANetworkError) {
  RequestServer first({"tcp://127.0.0.1:0"}, 1, echo(), 1 << 20);
  const std::string taken = first.bound_urls().front();
  try {
    RequestServer second({taken}, 1, echo(), 1 << 20);
    FAIL() << "bound twice";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNetwork);
    EXPECT_NE(std::string(e.what()).find("address in use"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(taken), std::string::npos) << e.what();
  }
}

TEST(PsTransportTcp, BoundUrlsHaveTheRealPort) {
  RequestServer server({"tcp://127.0.0.1:0", test::unique_url("ipc")}, 1, echo(), 1 << 20);
  const auto urls = server.bound_urls();
  ASSERT_EQ(urls.size(), 2u);
  EXPECT_EQ(urls[0].find("tcp://127.0.0.1:"), 0u);
  EXPECT_NE(urls[0], "tcp://127.0.0.1:0");
  RequestClient over_ipc(urls[1], 5s);
  EXPECT_EQ(text_of(over_ipc.call(text_message("a"), 5s)), "echo:a");
}

TEST(PsTransportTcp, UnreachablePeerTimesOutInConnect) {
  // Hold a bound but never-listening socket on the port for the whole test:
  // connections are refused, and no test running beside this one can be
  // given the port in the meantime (a released port could be).
  const int holder = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(holder, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(holder, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  socklen_t length = sizeof address;
  ASSERT_EQ(::getsockname(holder, reinterpret_cast<sockaddr*>(&address), &length), 0);
  const std::string url = "tcp://127.0.0.1:" + std::to_string(ntohs(address.sin_port));
  try {
    RequestClient client(url, 300ms);
    FAIL() << "connected to nothing";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kTimedOut);
  }
  RequestClient lazy(url, 0ms);
  try {
    lazy.call(text_message("x"), 300ms);
    FAIL() << "answered by nothing";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kTimedOut);
    EXPECT_NE(std::string(e.what()).find("could not reach"), std::string::npos) << e.what();
  }
  ::close(holder);
}

TEST(PsTransportTcp, MalformedUrlIsInvalidArgument) {
  try {
    RequestServer s({"nonsense://x"}, 1, echo(), 1 << 20);
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_TRUE(e.code() == ErrorCode::kInvalidArgument || e.code() == ErrorCode::kNetwork) << e.what();
  }
}

TEST(PsTransportTcp, MessageGrowAndClear) {
  Message m = Message::with_capacity(64);
  uint8_t* p = m.grow(3);
  std::memcpy(p, "abc", 3);
  std::memcpy(m.grow(2), "de", 2);
  EXPECT_EQ(text_of(m), "abcde");
  m.clear();
  EXPECT_TRUE(m.empty());
  Message moved = std::move(m);
  EXPECT_EQ(m.get(), nullptr);
  EXPECT_NE(moved.get(), nullptr);
}

}  // namespace
}  // namespace dt::ps
