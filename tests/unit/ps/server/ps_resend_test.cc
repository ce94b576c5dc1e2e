// PS_RESEND (issue 15): a worker whose push reply is lost sends the push
// again; the server recognises it by worker, key and round and never counts
// it twice, so the round's sum stays exact. The reply is really lost: the
// server handles the push and its answer is never sent.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <future>
#include <mutex>
#include <vector>

#include "core/error.h"
#include "ps/server/request_handler.h"
#include "ps/transport/data_codec.h"
#include "ps/transport/frame.h"
#include "ps/transport/request_client.h"
#include "ps/transport/request_server.h"

namespace dt::ps {
namespace {

using core::DType;
using core::Error;
using core::ErrorCode;
using core::Shape;
using namespace std::chrono_literals;

constexpr int64_t kElements = 1000;
const PartInfo kPart{PartKey{7, 0, kElements}, DType::kFloat32, Shape({kElements})};

EncodedData with_values(wire::DataOp op, int worker, int64_t round, float value, bool may_resend,
                        const std::string& text = {}) {
  EncodedData e = encode_data_request(op, worker, {SliceSpec{kPart, round, part_bytes(kPart)}}, text, 0, may_resend);
  std::vector<float> values(kElements, value);
  std::memcpy(e.slice_data[0], values.data(), part_bytes(kPart));
  return e;
}

// The server: the real handler, except that the reply to the first push it
// is told to drop never leaves (as if the network lost it).
struct LossyServer {
  LossyServer()
      : server({"tcp://127.0.0.1:0"}, 8,
               [this](Message request, RequestServer::Reply reply) {
                 const Frame frame = Frame::parse(request.copy());
                 const auto* data = frame.body<wire::DataRequest>();
                 const bool push = data != nullptr && data->op() == wire::DataOp::Push;
                 if (push) ++pushes_seen;
                 if (push && data->worker_rank() == 0 && drop_next_push_reply.exchange(false)) {
                   handler.handle(std::move(request), [](Message) {});  // handled, answer lost
                   return;
                 }
                 handler.handle(std::move(request), reply);
               },
               kDefaultMaxMessageBytes) {}
  std::string url() const { return server.bound_urls().front(); }

  ServerRequestHandler handler{2};
  std::atomic<bool> drop_next_push_reply{false};
  std::atomic<int> pushes_seen{0};
  RequestServer server;
};

// Error status of a data reply (0: OK), or the transport's error code.
int status_of(RequestClient& client, Message request, std::chrono::milliseconds resend_after,
              std::vector<float>* pulled = nullptr) {
  std::promise<int> result;
  client.request(
      std::move(request), 10s,
      [&](std::optional<Error> error, Message reply) {
        if (error) return result.set_value(static_cast<int>(error->code()));
        try {
          const Frame frame = Frame::parse(std::move(reply));
          const auto& data = frame.expect<wire::DataReply>();
          if (pulled && data.status() == 0 && data.slices() && data.slices()->size() == 1) {
            const DecodedSlice s = decode_slice(frame, data.slices()->Get(0));
            pulled->resize(kElements);
            std::memcpy(pulled->data(), s.data, s.data_bytes);
          }
          result.set_value(data.status());
        } catch (const Error& e) {
          result.set_value(static_cast<int>(e.code()));
        }
      },
      resend_after);
  return result.get_future().get();
}

TEST(PsResend, AResentPushAfterALostReplyIsCountedOnce) {
  LossyServer server;
  RequestClient worker0(server.url(), 5s);
  RequestClient worker1(server.url(), 5s);
  ASSERT_EQ(status_of(worker0, with_values(wire::DataOp::Init, 0, -1, 0, true, "dist_sync").message, 200ms), 0);
  ASSERT_EQ(status_of(worker1, with_values(wire::DataOp::Init, 1, -1, 0, true, "dist_sync").message, 200ms), 0);

  server.drop_next_push_reply = true;
  const auto started = std::chrono::steady_clock::now();
  // Worker 0's reply is lost; after 200 ms it sends the same push again and
  // gets the answer the first one should have had.
  EXPECT_EQ(status_of(worker0, with_values(wire::DataOp::Push, 0, 1, 2.0f, true).message, 200ms), 0);
  EXPECT_GE(std::chrono::steady_clock::now() - started, 200ms);
  EXPECT_EQ(status_of(worker1, with_values(wire::DataOp::Push, 1, 1, 3.0f, true).message, 200ms), 0);
  EXPECT_EQ(server.pushes_seen.load(), 3) << "worker 0's push should have arrived twice";

  std::vector<float> sum;
  ASSERT_EQ(status_of(worker1, with_values(wire::DataOp::Pull, 1, 1, 0, true).message, 200ms, &sum), 0);
  ASSERT_EQ(sum.size(), static_cast<size_t>(kElements));
  for (float v : sum) ASSERT_EQ(v, 5.0f) << "2 + 3, not 2 + 2 + 3";
  // The next round is unaffected.
  EXPECT_EQ(status_of(worker0, with_values(wire::DataOp::Push, 0, 2, 1.0f, true).message, 200ms), 0);
  EXPECT_EQ(status_of(worker1, with_values(wire::DataOp::Push, 1, 2, 1.0f, true).message, 200ms), 0);
  ASSERT_EQ(status_of(worker0, with_values(wire::DataOp::Pull, 0, 2, 0, true).message, 200ms, &sum), 0);
  EXPECT_EQ(sum.front(), 2.0f);
}

TEST(PsResend, WithoutTheMarkARepeatedPushIsStillRefused) {
  LossyServer server;
  RequestClient worker0(server.url(), 5s);
  RequestClient worker1(server.url(), 5s);
  ASSERT_EQ(status_of(worker0, with_values(wire::DataOp::Init, 0, -1, 0, false, "dist_sync").message, 0ms), 0);
  ASSERT_EQ(status_of(worker1, with_values(wire::DataOp::Init, 1, -1, 0, false, "dist_sync").message, 0ms), 0);
  ASSERT_EQ(status_of(worker0, with_values(wire::DataOp::Push, 0, 1, 2.0f, false).message, 0ms), 0);
  EXPECT_EQ(status_of(worker0, with_values(wire::DataOp::Push, 0, 1, 2.0f, false).message, 0ms),
            static_cast<int>(ErrorCode::kBadState));
}

}  // namespace
}  // namespace dt::ps
