// The job's authentication on the request/reply transport (issue 18): only a
// connection that proves it holds the secret reaches the handler; a node
// without it, with a wrong one, or replaying a recorded handshake gets
// kUnauthenticated and the server keeps serving the real nodes.
#include <gtest/gtest.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <future>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "core/error.h"
#include "net/auth_handshake.h"
#include "ps/job/security_environment.h"
#include "ps/transport/request_client.h"
#include "ps/transport/request_server.h"
#include "unit/ps/ps_test_util.h"

namespace dt::ps {
namespace {

using core::Error;
using core::ErrorCode;
using namespace net;
using namespace std::chrono_literals;

using test::text_message;
using test::text_of;

TransportSecurity with_secret(uint8_t fill) {
  TransportSecurity s;
  JobSecret secret{};
  for (size_t i = 0; i < secret.size(); ++i) secret[i] = static_cast<uint8_t>(fill + i);
  s.secret = secret;
  return s;
}

// An echo server that counts the requests its handler saw.
struct CountingServer {
  explicit CountingServer(const TransportSecurity& security, const std::string& url = "tcp://127.0.0.1:0")
      : server({url}, 4,
               [this](Message request, RequestServer::Reply reply) {
                 ++handled;
                 reply(text_message("echo:" + text_of(request)));
               },
               kDefaultMaxMessageBytes, nullptr, ConnectionPolicy(), security) {}
  std::string url() const { return server.bound_urls().front(); }
  std::atomic<int> handled{0};
  RequestServer server;
};

ErrorCode code_of_call(RequestClient& client, const std::string& text, std::string* message = nullptr) {
  try {
    client.call(text_message(text), 5s);
  } catch (const Error& e) {
    if (message) *message = e.what();
    return e.code();
  }
  return static_cast<ErrorCode>(0);
}

TEST(AuthenticatedTransport, NodesWithTheSecretTalkAsBefore) {
  const TransportSecurity security = with_secret(1);
  CountingServer server(security);
  RequestClient client(server.url(), 5s, kDefaultMaxMessageBytes, security);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(text_of(client.call(text_message("x" + std::to_string(i)), 5s)), "echo:x" + std::to_string(i));
  EXPECT_EQ(server.handled.load(), 20);
}

TEST(AuthenticatedTransport, ManyRequestsBeforeTheProofAllWaitForIt) {
  const TransportSecurity security = with_secret(1);
  CountingServer server(security);
  RequestClient client(server.url(), 0ms, kDefaultMaxMessageBytes, security);
  std::vector<std::future<std::string>> replies;
  for (int i = 0; i < 16; ++i) {
    auto promise = std::make_shared<std::promise<std::string>>();
    replies.push_back(promise->get_future());
    client.request(text_message(std::to_string(i)), 5s, [promise](std::optional<Error> error, Message reply) {
      promise->set_value(error ? std::string("error: ") + error->what() : text_of(reply));
    });
  }
  for (int i = 0; i < 16; ++i) {
    ASSERT_EQ(replies[static_cast<size_t>(i)].wait_for(10s), std::future_status::ready);
    EXPECT_EQ(replies[static_cast<size_t>(i)].get(), "echo:" + std::to_string(i));
  }
}

TEST(AuthenticatedTransport, ANodeWithoutTheSecretIsRefusedAndNeverReachesTheHandler) {
  CountingServer server(with_secret(1));
  RequestClient stranger(server.url(), 5s);
  std::string message;
  EXPECT_EQ(code_of_call(stranger, "push", &message), ErrorCode::kUnauthenticated);
  EXPECT_NE(message.find("secret"), std::string::npos) << message;
  EXPECT_EQ(server.handled.load(), 0);
  // The real nodes go on.
  RequestClient member(server.url(), 5s, kDefaultMaxMessageBytes, with_secret(1));
  EXPECT_EQ(text_of(member.call(text_message("ok"), 5s)), "echo:ok");
  EXPECT_EQ(server.handled.load(), 1);
}

TEST(AuthenticatedTransport, AWrongSecretIsRefusedOnBothSides) {
  CountingServer server(with_secret(1));
  RequestClient impostor(server.url(), 5s, kDefaultMaxMessageBytes, with_secret(2));
  std::string message;
  EXPECT_EQ(code_of_call(impostor, "push", &message), ErrorCode::kUnauthenticated);
  EXPECT_NE(message.find("secret"), std::string::npos) << message;
  EXPECT_EQ(code_of_call(impostor, "again"), ErrorCode::kUnauthenticated);
  EXPECT_EQ(server.handled.load(), 0);
  RequestClient member(server.url(), 5s, kDefaultMaxMessageBytes, with_secret(1));
  EXPECT_EQ(text_of(member.call(text_message("ok"), 5s)), "echo:ok");
}

TEST(AuthenticatedTransport, ANodeWithASecretRefusesAServerWithout) {
  CountingServer open_server(TransportSecurity{});
  RequestClient member(open_server.url(), 5s, kDefaultMaxMessageBytes, with_secret(1));
  std::string message;
  EXPECT_EQ(code_of_call(member, "push", &message), ErrorCode::kUnauthenticated);
  EXPECT_NE(message.find("no part"), std::string::npos) << message;
}

// A raw nng requester: what an attacker with a recording can send.
class RawRequester {
 public:
  explicit RawRequester(const std::string& url) {
    EXPECT_EQ(nng_req0_open(&socket_), 0);
    nng_socket_set_ms(socket_, NNG_OPT_RECVTIMEO, 3000);
    nng_socket_set_ms(socket_, NNG_OPT_SENDTIMEO, 3000);
    EXPECT_EQ(nng_dial(socket_, url.c_str(), nullptr, 0), 0);
  }
  ~RawRequester() { nng_close(socket_); }
  // The reply's bytes; empty when none came.
  std::string call(const std::string& bytes) {
    if (nng_send(socket_, const_cast<char*>(bytes.data()), bytes.size(), 0) != 0) return "";
    char* buf = nullptr;
    size_t size = 0;
    if (nng_recv(socket_, &buf, &size, NNG_FLAG_ALLOC) != 0) return "";
    std::string out(buf, size);
    nng_free(buf, size);
    return out;
  }

 private:
  nng_socket socket_{};
};

TEST(AuthenticatedTransport, AReplayedHandshakeProvesNothing) {
  const TransportSecurity security = with_secret(7);
  CountingServer server(security);
  // A real handshake, recorded.
  RawRequester recorder(server.url());
  HandshakeMessage hello;
  hello.type = HandshakeType::kHello;
  hello.nonce = fresh_nonce();
  const std::string recorded_hello = encode_handshake(hello);
  const HandshakeMessage challenge = [&] {
    const std::string reply = recorder.call(recorded_hello);
    return decode_handshake(reinterpret_cast<const uint8_t*>(reply.data()), reply.size());
  }();
  ASSERT_EQ(challenge.type, HandshakeType::kChallenge);
  HandshakeMessage proof;
  proof.type = HandshakeType::kProof;
  proof.mac = client_mac(*security.secret, hello.nonce, challenge.nonce);
  const std::string recorded_proof = encode_handshake(proof);
  const std::string accepted = recorder.call(recorded_proof);
  ASSERT_EQ(decode_handshake(reinterpret_cast<const uint8_t*>(accepted.data()), accepted.size()).type,
            HandshakeType::kAccepted);
  EXPECT_EQ(recorder.call("on the proven connection"), "echo:on the proven connection");

  // The same bytes on a new connection: a fresh server nonce, so the old
  // proof is refused and nothing reaches the handler.
  RawRequester replayer(server.url());
  const std::string new_challenge = replayer.call(recorded_hello);
  const std::string verdict = replayer.call(recorded_proof);
  ASSERT_FALSE(verdict.empty());
  EXPECT_EQ(decode_handshake(reinterpret_cast<const uint8_t*>(verdict.data()), verdict.size()).type,
            HandshakeType::kRefused);
  // The failed connection is closed at its next message; nng's requester
  // resends on a new connection, which has proven nothing either.
  const std::string after = replayer.call("poison");
  EXPECT_TRUE(after.empty() || is_handshake(reinterpret_cast<const uint8_t*>(after.data()), after.size())) << after;
  // A proof with no challenge at all.
  RawRequester skipper(server.url());
  const std::string skipped = skipper.call(recorded_proof);
  EXPECT_EQ(decode_handshake(reinterpret_cast<const uint8_t*>(skipped.data()), skipped.size()).type,
            HandshakeType::kRefused);
  EXPECT_EQ(server.handled.load(), 1);
}

TEST(AuthHandshake, DecodeRejectsMalformedMessages) {
  HandshakeMessage hello;
  hello.type = HandshakeType::kHello;
  const std::string good = encode_handshake(hello);
  const auto decode = [](const std::string& s) {
    return decode_handshake(reinterpret_cast<const uint8_t*>(s.data()), s.size());
  };
  EXPECT_EQ(decode(good).type, HandshakeType::kHello);
  const auto expect_protocol = [&](std::string bytes) {
    try {
      decode(bytes);
      ADD_FAILURE() << "accepted a malformed message of " << bytes.size() << " bytes";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kProtocol);
    }
  };
  expect_protocol(good.substr(0, good.size() - 1));  // short
  expect_protocol(good + "x");                         // long
  std::string v = good;
  v[4] = 2;  // version
  expect_protocol(v);
  std::string t = good;
  t[5] = 9;  // type
  expect_protocol(t);
  std::string r = good;
  r[6] = 1;  // reserved
  expect_protocol(r);
  expect_protocol("DTA");
  HandshakeMessage refused;
  refused.type = HandshakeType::kRefused;
  refused.reason = std::string(600, 'x');
  EXPECT_EQ(decode(encode_handshake(refused)).reason.size(), kHandshakeReasonMaxBytes);
}

TEST(SecurityEnvironment, ReadsTheSecretAndNeverEchoesIt) {
  const std::string hex = new_job_secret_hex();
  ASSERT_EQ(hex.size(), 64u);
  EXPECT_NE(hex, new_job_secret_hex());
  const auto env_of = [](std::map<std::string, std::string> vars) {
    return [vars](const char* name) -> std::optional<std::string> {
      auto it = vars.find(name);
      if (it == vars.end()) return std::nullopt;
      return it->second;
    };
  };
  EXPECT_FALSE(security_from(env_of({})).secret.has_value());
  const TransportSecurity s = security_from(env_of({{"DT_JOB_SECRET", hex}}));
  ASSERT_TRUE(s.secret.has_value());
  EXPECT_EQ((*s.secret)[0], std::stoi(hex.substr(0, 2), nullptr, 16));
  const std::string bad = "zz" + hex.substr(2);
  try {
    security_from(env_of({{"DT_JOB_SECRET", bad}}));
    ADD_FAILURE() << "accepted a malformed secret";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_EQ(std::string(e.what()).find(bad), std::string::npos) << "the secret appears in the error";
  }
  // A file must be its owner's alone.
  char path[] = "/tmp/dt-secret-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, hex.data(), hex.size()), static_cast<ssize_t>(hex.size()));
  close(fd);
  chmod(path, 0600);
  EXPECT_EQ(security_from(env_of({{"DT_JOB_SECRET_FILE", path}})).secret, s.secret);
  chmod(path, 0644);
  EXPECT_THROW(security_from(env_of({{"DT_JOB_SECRET_FILE", path}})), Error);
  EXPECT_THROW(security_from(env_of({{"DT_JOB_SECRET_FILE", path}, {"DT_JOB_SECRET", hex}})), Error);
  unlink(path);
  EXPECT_THROW(security_from(env_of({{"DT_JOB_SECRET_FILE", path}})), Error);
}

}  // namespace
}  // namespace dt::ps
