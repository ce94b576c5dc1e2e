// What the job's authentication costs (issue 18): per connection, the time
// from dialling to the first reply with and without the secret (the
// handshake adds two round trips and three HMAC-SHA256s); per message, the
// round trip of small requests on an established connection with and
// without it (a table lookup and a 4-byte compare on the server). tcp
// loopback; one JSON line per figure.
//
//   auth_bench [--connections N] [--messages N] [--bytes B]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "ps/transport/request_client.h"
#include "ps/transport/request_server.h"

namespace {

using namespace dt::ps;
using namespace dt::net;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

Message filled(size_t bytes) {
  Message m = Message::with_capacity(bytes);
  std::memset(m.grow(bytes), 7, bytes);
  return m;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Figures {
  double connect_us;  // median: dial, (prove), first reply
  double message_us;  // median round trip on a proven connection
};

Figures measure(const TransportSecurity& security, int connections, int messages, size_t bytes) {
  RequestServer server({"tcp://127.0.0.1:0"}, 4, [](Message request, RequestServer::Reply reply) {
    reply(std::move(request));
  }, kDefaultMaxMessageBytes, nullptr, ConnectionPolicy(), security);
  const std::string url = server.bound_urls().front();
  std::vector<double> connect;
  for (int i = 0; i < connections; ++i) {
    const auto start = Clock::now();
    RequestClient client(url, 0ms, kDefaultMaxMessageBytes, security);
    client.call(filled(16), 10s);
    connect.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
  }
  RequestClient client(url, 5s, kDefaultMaxMessageBytes, security);
  client.call(filled(16), 10s);
  std::vector<double> round_trips;
  for (int i = 0; i < messages; ++i) {
    const auto start = Clock::now();
    client.call(filled(bytes), 10s);
    round_trips.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
  }
  return {median(connect), median(round_trips)};
}

}  // namespace

int main(int argc, char** argv) {
  int connections = 200;
  int messages = 5000;
  size_t bytes = 4096;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--connections") connections = std::atoi(argv[i + 1]);
    else if (flag == "--messages") messages = std::atoi(argv[i + 1]);
    else if (flag == "--bytes") bytes = static_cast<size_t>(std::atoll(argv[i + 1]));
    else {
      std::fprintf(stderr, "usage: auth_bench [--connections N] [--messages N] [--bytes B]\n");
      return 2;
    }
  }
  TransportSecurity with_secret;
  with_secret.secret = JobSecret{};
  with_secret.secret->fill(0x5a);
  // Alternated, twice, so drift between runs affects both alike.
  for (int round = 0; round < 2; ++round) {
    for (const bool secret : {false, true}) {
      const Figures f = measure(secret ? with_secret : TransportSecurity{}, connections, messages, bytes);
      std::printf("{\"bench\":\"auth\",\"transport\":\"tcp\",\"secret\":%s,\"round\":%d,\"connect_first_reply_us\":%.1f,"
                  "\"message_bytes\":%zu,\"round_trip_us\":%.1f}\n",
                  secret ? "true" : "false", round, f.connect_us, bytes, f.message_us);
    }
  }
  return 0;
}
