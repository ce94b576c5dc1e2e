// What a server lets each worker say (issue 23): connections bound to ranks,
// worker 0's optimizer settings, the round window, sizes checked against the
// stored part, and the memory limit. The handler is driven directly (pipe 0:
// no connection) except where the connection itself is the point.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "optim/optimizer_config.h"
#include "ps/server/request_handler.h"
#include "ps/transport/data_codec.h"
#include "ps/transport/frame.h"
#include "ps/transport/request_client.h"
#include "ps/transport/request_server.h"
#include "unit/ps/ps_test_util.h"

namespace dt::ps {
namespace {

using core::DType;
using core::Error;
using core::ErrorCode;
using core::Shape;
using namespace std::chrono_literals;

PartInfo info(uint64_t key, int64_t n) { return PartInfo{PartKey{key, 0, n}, DType::kFloat32, Shape({n})}; }

// The status of a reply the handler sent (0: OK), or -1 while none came.
struct Answer {
  int status = -1;
  std::string message;
  RequestServer::Reply reply() {
    return [this](Message m) {
      const Frame frame = Frame::parse(std::move(m));
      if (const auto* data = frame.body<wire::DataReply>()) {
        status = data->status();
        message = data->message() ? data->message()->str() : "";
      } else {
        status = static_cast<int>(ErrorCode::kInternal);
      }
    };
  }
};

int status_of(ServerRequestHandler& server, EncodedData request) {
  Answer answer;
  server.handle(std::move(request.message), answer.reply());
  return answer.status;
}

EncodedData init(int worker, const PartInfo& part, float value = 1.0f) {
  EncodedData e = encode_data_request(wire::DataOp::Init, worker, {SliceSpec{part, -1, part_bytes(part)}}, "dist_sync");
  std::vector<float> v(static_cast<size_t>(part.part.end - part.part.begin), value);
  std::memcpy(e.slice_data[0], v.data(), part_bytes(part));
  return e;
}

EncodedData push(int worker, const PartInfo& part, int64_t round) {
  EncodedData e = encode_data_request(wire::DataOp::Push, worker, {SliceSpec{part, round, part_bytes(part)}});
  std::memset(e.slice_data[0], 0, part_bytes(part));
  return e;
}

EncodedData pull(int worker, const PartInfo& part, int64_t round) {
  return encode_data_request(wire::DataOp::Pull, worker, {SliceSpec{part, round, 0}});
}

EncodedData command(wire::DataOp op, int worker, double number, const std::string& text = "") {
  return encode_data_request(op, worker, {}, text, number);
}

// An OptimizerState request whose one array claims claim's shape and
// carries data_bytes bytes (zeros): what a forged request may say.
Message forged_optimizer_state(int worker, const PartInfo& claim, size_t data_bytes, const std::string& name) {
  flatbuffers::FlatBufferBuilder fbb;
  const std::vector<SliceSpec> specs{SliceSpec{claim, -1, data_bytes}};
  const SliceTables tables = write_slices(fbb, specs);
  auto arrays = fbb.CreateVector(tables.tables);
  auto names = fbb.CreateVectorOfStrings({name});
  uint8_t* payload = nullptr;
  Message m = make_message(fbb, wire::CreateOptimizerState(fbb, worker, names, arrays), tables.payload_bytes, &payload);
  if (payload != nullptr) std::memset(payload, 0, tables.payload_bytes);
  return m;
}

EncodedData join(int worker, int64_t round, int64_t pid) { return EncodedData{encode_join(worker, round, pid), {}}; }

constexpr int kBadState = static_cast<int>(ErrorCode::kBadState);

TEST(PsServerRules, OnlyWorkerZeroSetsTheLearningRateAndRescale) {
  ServerRequestHandler server(2);
  const auto sgd = optim::OptimizerConfig("sgd").set("learning_rate", 0.1);
  Answer one;
  server.handle(command(wire::DataOp::SetOptimizer, 1, 0, sgd.to_json()).message, one.reply());
  EXPECT_EQ(one.status, -1) << "worker 1's optimizer was answered before worker 0's arrived";
  EXPECT_EQ(status_of(server, command(wire::DataOp::SetOptimizer, 0, 0, sgd.to_json())), 0);
  EXPECT_EQ(one.status, 0) << one.message;
  EXPECT_EQ(status_of(server, command(wire::DataOp::SetLearningRate, 1, 1000)), kBadState);
  EXPECT_EQ(status_of(server, command(wire::DataOp::SetRescaleGrad, 1, 2)), kBadState);
  EXPECT_EQ(status_of(server, command(wire::DataOp::SetLearningRate, 0, std::nan(""))),
            static_cast<int>(ErrorCode::kInvalidArgument));
  EXPECT_EQ(status_of(server, command(wire::DataOp::SetLearningRate, 0, 0.05)), 0);
}

// A push's numbers for its round (TensorSlice.learning_rate / rescale_grad)
// are a setting too: worker 0's alone, and numbers an optimizer takes; the
// whole request is refused before any slice of it counts.
TEST(PsServerRules, OnlyWorkerZerosPushesCarryOptimizerNumbers) {
  ServerRequestHandler server(2);
  const auto sgd = optim::OptimizerConfig("sgd").set("learning_rate", 0.1);
  const PartInfo part = info(5, 4);
  for (int w : {1, 0}) {
    Answer set;
    server.handle(command(wire::DataOp::SetOptimizer, w, 0, sgd.to_json()).message, set.reply());
    EXPECT_EQ(status_of(server, init(w, part)), 0);
  }
  const auto push_with = [&](int worker, int64_t round, optim::UpdateNumbers numbers) {
    SliceSpec spec{part, round, part_bytes(part)};
    spec.numbers = numbers;
    EncodedData e = encode_data_request(wire::DataOp::Push, worker, {spec});
    std::memset(e.slice_data[0], 0, part_bytes(part));
    return e;
  };
  EXPECT_EQ(status_of(server, push_with(1, 1, optim::UpdateNumbers{std::nullopt, 0.5})), kBadState);
  EXPECT_EQ(status_of(server, push_with(0, 1, optim::UpdateNumbers{std::nan(""), std::nullopt})),
            static_cast<int>(ErrorCode::kInvalidArgument));
  EXPECT_EQ(status_of(server, push_with(0, 1, optim::UpdateNumbers{0.05, -2.0})),
            static_cast<int>(ErrorCode::kInvalidArgument));
  // None of them counted: round 1 is still open to both.
  EXPECT_EQ(status_of(server, push_with(0, 1, optim::UpdateNumbers{0.05, 0.5})), 0);
  EXPECT_EQ(status_of(server, push(1, part, 1)), 0);
  EXPECT_EQ(status_of(server, pull(1, part, 1)), 0);
}

TEST(PsServerRules, AnotherWorkersDifferentOptimizerIsRefusedAndWorkerZerosKept) {
  ServerRequestHandler server(2);
  const auto rank0 = optim::OptimizerConfig("sgd").set("learning_rate", 0.1);
  const auto other = optim::OptimizerConfig("sgd").set("learning_rate", 1000.0);
  EXPECT_EQ(status_of(server, command(wire::DataOp::SetOptimizer, 0, 0, rank0.to_json())), 0);
  Answer answer;
  server.handle(command(wire::DataOp::SetOptimizer, 1, 0, other.to_json()).message, answer.reply());
  EXPECT_EQ(answer.status, -1) << "held until worker 0 changes the optimizer (or its deadline)";
  // Worker 0 sets the same again: worker 1's differs and is refused.
  EXPECT_EQ(status_of(server, command(wire::DataOp::SetOptimizer, 0, 0, rank0.to_json())), 0);
  EXPECT_EQ(answer.status, static_cast<int>(ErrorCode::kInvalidArgument));
  EXPECT_NE(answer.message.find("worker 0 set"), std::string::npos) << answer.message;
  EXPECT_TRUE(server.store().has_optimizer());
}

// A worker joining a running job (issue 19): the question is answered with
// the round, a join needs a real pid and a round, and one at a round
// already summed is refused.
TEST(PsServerRules, JoinAnswersItsFloorAndRefusesWhatItCannotTake) {
  ServerRequestHandler server(2);
  ASSERT_EQ(status_of(server, init(0, info(1, 4))), 0);
  ASSERT_EQ(status_of(server, init(1, info(1, 4))), 0);
  ASSERT_EQ(status_of(server, push(0, info(1, 4), 1)), 0);
  ASSERT_EQ(status_of(server, push(1, info(1, 4), 1)), 0);
  int64_t floor = -1;
  server.handle(encode_join_question(1), [&](Message m) {
    const Frame frame = Frame::parse(std::move(m));
    floor = frame.expect<wire::DataReply>().round();
  });
  EXPECT_EQ(floor, 3) << "round 2 is open";
  const int protocol = static_cast<int>(ErrorCode::kProtocol);
  EXPECT_EQ(status_of(server, join(1, 3, 0)), protocol) << "no pid (0: the first process)";
  EXPECT_EQ(status_of(server, join(1, 3, -12)), protocol);
  EXPECT_EQ(status_of(server, join(1, -3, 42)), protocol) << "no round";
  EXPECT_EQ(status_of(server, join(1, 1, 42)), kBadState) << "round 1 is summed";
  EXPECT_EQ(status_of(server, join(1, 3, 42)), 0);
  EXPECT_EQ(status_of(server, push(0, info(1, 4), 2)), 0) << "round 2 goes on without worker 1";
  EXPECT_EQ(status_of(server, push(1, info(1, 4), 2)), kBadState) << "its first round is 3";
  EXPECT_EQ(status_of(server, push(1, info(1, 4), 3)), 0);
}

TEST(PsServerRules, RoundsBeyondTheWindowAreRefusedNotHeld) {
  ServerRequestHandler server(2);
  const PartInfo part = info(3, 4);
  ASSERT_EQ(status_of(server, init(1, part)), 0);
  ASSERT_EQ(status_of(server, init(0, part)), 0);
  EXPECT_EQ(status_of(server, pull(0, part, 1000000000)), kBadState);
  EXPECT_EQ(status_of(server, pull(1, part, ServerKeyStore::kRoundWindow + 1)), kBadState);
  // Within the window it waits for its round (answered by the pushes).
  Answer waiting;
  server.handle(pull(1, part, 1).message, waiting.reply());
  EXPECT_EQ(waiting.status, -1);
  EXPECT_EQ(status_of(server, push(0, part, 1)), 0);
  EXPECT_EQ(status_of(server, push(1, part, 1)), 0);
  EXPECT_EQ(waiting.status, 0) << waiting.message;
  // Pushes run ahead only within the window too.
  for (int64_t round = 2; round <= 1 + ServerKeyStore::kRoundWindow; ++round) {
    Answer held;
    server.handle(push(0, part, round).message, held.reply());
  }
  EXPECT_EQ(status_of(server, push(0, part, 2 + ServerKeyStore::kRoundWindow)), kBadState);
}

TEST(PsServerRules, SizesComeFromTheStoredPartNotFromTheClaim) {
  ServerRequestHandler server(1);
  const PartInfo part = info(5, 4);
  ASSERT_EQ(status_of(server, init(0, part)), 0);
  const Shape huge({int64_t{1} << 30, int64_t{1} << 30});
  // A pull of 2^60 elements of a known and of an unknown key: no reply is
  // sized from the claim (under ASan an allocation that large aborts).
  EXPECT_EQ(status_of(server, pull(0, PartInfo{PartKey{5, 0, int64_t{1} << 60}, DType::kFloat32, huge}, 0)),
            static_cast<int>(ErrorCode::kShapeMismatch));
  EXPECT_EQ(status_of(server, pull(0, PartInfo{PartKey{77, 0, int64_t{1} << 60}, DType::kFloat32, huge}, 0)),
            static_cast<int>(ErrorCode::kNotFound));
  // A wrong shape is refused without telling the stored one.
  Answer wrong;
  server.handle(pull(0, PartInfo{PartKey{5, 0, 4}, DType::kFloat32, Shape({2, 2})}, 0).message, wrong.reply());
  EXPECT_EQ(wrong.status, static_cast<int>(ErrorCode::kShapeMismatch));
  EXPECT_EQ(wrong.message.find("(4)"), std::string::npos) << wrong.message;
  // Optimizer state claiming 2^60 elements with 4 bytes of data.
  server.store().set_optimizer(optim::OptimizerConfig("sgd").set("learning_rate", 0.1).set("momentum", 0.9));
  EncodedData state{forged_optimizer_state(0, PartInfo{PartKey{0, 0, 1}, DType::kFloat32, huge}, 4, "5/0/4.mom"),
                    {}};
  EXPECT_EQ(status_of(server, std::move(state)), static_cast<int>(ErrorCode::kProtocol));
  EXPECT_EQ(status_of(server, pull(0, part, 0)), 0);
}

TEST(PsServerRules, KeysStayWithinTheMemoryLimit) {
  constexpr uint64_t kLimit = 1 << 20;
  ServerRequestHandler server(1, kLimit);
  EXPECT_EQ(server.store().memory_limit(), kLimit);
  // 64 Ki floats = 256 KiB a part, twice that with its round buffer: two fit.
  EXPECT_EQ(status_of(server, init(0, info(1, 64 * 1024))), 0);
  EXPECT_EQ(status_of(server, init(0, info(2, 64 * 1024))), 0);
  Answer refused;
  server.handle(init(0, info(3, 64 * 1024)).message, refused.reply());
  EXPECT_EQ(refused.status, static_cast<int>(ErrorCode::kOutOfMemory));
  EXPECT_NE(refused.message.find("DT_PS_SERVER_MEMORY_LIMIT"), std::string::npos) << refused.message;
  EXPECT_LE(server.store().memory_used(), kLimit);
  // The refused key does not exist: a pull of it is kNotFound.
  EXPECT_EQ(status_of(server, pull(0, info(3, 64 * 1024), 0)), static_cast<int>(ErrorCode::kNotFound));
}

TEST(PsServerRules, TheAutomaticLimitIsFixedByTheKeysOfTheFirstPush) {
  ServerRequestHandler server(2);
  EXPECT_GT(server.store().memory_limit(), ServerKeyStore::kAutomaticMemoryFloor);
  ASSERT_EQ(status_of(server, init(1, info(1, 16))), 0);
  ASSERT_EQ(status_of(server, init(0, info(1, 16))), 0);
  ASSERT_EQ(status_of(server, push(0, info(1, 16), 1)), 0);
  EXPECT_EQ(server.store().memory_limit(), ServerKeyStore::kAutomaticMemoryFloor);
  // Worker 1's init of a part only checks sizes: no data needed to be refused.
  const PartInfo too_big = info(2, static_cast<int64_t>(ServerKeyStore::kAutomaticMemoryFloor / 8));
  try {
    server.store().init(1, too_big, nullptr, part_bytes(too_big));
    FAIL() << "a part past the automatic limit was created";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kOutOfMemory) << e.what();
  }
}

TEST(PsServerRules, AConnectionSpeaksForOneWorkerAndAWorkerOnOneConnection) {
  ServerRequestHandler server(2);
  const std::string url = test::unique_url("inproc");
  RequestServer transport({url}, 2, [&](Message m, RequestServer::Reply r) { server.handle(std::move(m), r); },
                          kDefaultMaxMessageBytes, [&](uint32_t pipe) { server.connection_closed(pipe); });
  const auto status = [](RequestClient& client, EncodedData request) {
    try {
      const Frame reply = Frame::parse(client.call(std::move(request.message), 5s));
      return reply.expect<wire::DataReply>().status();
    } catch (const Error& e) {
      return static_cast<int>(e.code());
    }
  };
  const int protocol = static_cast<int>(ErrorCode::kProtocol);
  const PartInfo part = info(1, 2);
  auto worker0 = std::make_unique<RequestClient>(url, 5s);
  RequestClient stranger(url, 5s);
  EXPECT_EQ(status(*worker0, init(0, part)), 0);
  EXPECT_EQ(status(stranger, pull(0, part, 0)), protocol) << "a second connection spoke for worker 0";
  EXPECT_EQ(status(*worker0, pull(1, part, 0)), protocol) << "worker 0's connection spoke for worker 1";
  EXPECT_EQ(status(stranger, init(1, part)), 0) << "an unclaimed rank is the first connection's";
  // Once worker 0's connection is gone its rank may be claimed again (a
  // worker's redialed connection).
  worker0.reset();
  RequestClient again(url, 5s);
  int code = protocol;
  for (int i = 0; i < 200 && code == protocol; ++i) {
    code = status(again, pull(0, part, 0));
    if (code == protocol) std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(code, 0);
}

}  // namespace
}  // namespace dt::ps
