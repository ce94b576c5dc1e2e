// A server filling new copies of parts over the wire (PartFiller, DataOp
// PartState): the source is a real RequestServer on inproc, the copy's
// handler is driven directly, and its filler asks the source as a server
// does. The copy's pulls must then be the source's bytes, the optimizer's
// state and compressed pulls' residuals included.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "optim/optimizer_config.h"
#include "ps/job/job_config.h"
#include "ps/roles/node_table.h"
#include "ps/server/part_filler.h"
#include "ps/server/request_handler.h"
#include "ps/transport/data_codec.h"
#include "ps/transport/frame.h"
#include "ps/transport/request_client.h"
#include "ps/transport/request_server.h"
#include "ps/transport/state_codec.h"

namespace dt::ps {
namespace {

using core::DType;
using core::Error;
using core::ErrorCode;
using core::Shape;
using net::TransportSecurity;
using namespace std::chrono_literals;

constexpr int64_t kN = 300;
const PartInfo kPart{PartKey{4, 0, kN}, DType::kFloat32, Shape({kN})};

// A reply, once it came: its status and, for pulls, the first slice's bytes
// and encoding.
struct Answer {
  std::mutex mutex;
  bool came = false;
  int status = -1;
  std::string message;
  std::vector<uint8_t> bytes;
  uint8_t encoding = 0;
  bool held = false;  // DataReply.held: kept at a new copy still being filled
  RequestServer::Reply reply() {
    return [this](Message m) {
      const Frame frame = Frame::parse(std::move(m));
      const auto& data = frame.expect<wire::DataReply>();
      std::lock_guard<std::mutex> lock(mutex);
      came = true;
      status = data.status();
      held = data.held();
      message = data.message() ? data.message()->str() : "";
      if (data.slices() && data.slices()->size() > 0) {
        const DecodedSlice s = decode_slice(frame, data.slices()->Get(0));
        const auto* begin = static_cast<const uint8_t*>(s.data);
        bytes.assign(begin, begin + s.data_bytes);
        encoding = s.encoding;
      }
    };
  }
  bool wait(std::chrono::milliseconds limit = 10s) {
    const auto end = std::chrono::steady_clock::now() + limit;
    for (;;) {
      {
        std::lock_guard<std::mutex> lock(mutex);
        if (came) return true;
      }
      if (std::chrono::steady_clock::now() > end) return false;
      std::this_thread::sleep_for(1ms);
    }
  }
  bool came_now() {
    std::lock_guard<std::mutex> lock(mutex);
    return came;
  }
};

std::vector<float> gradient(int worker, int64_t round) {
  std::vector<float> g(kN);
  for (int64_t i = 0; i < kN; ++i) g[i] = std::cos(0.11f * float(i) * float(round + 1) + float(worker)) * 0.6f;
  return g;
}

class PartFillerTest : public ::testing::Test {
 protected:
  // compression: the job's gradient compression ("none": the servers run
  // sgd with momentum instead). rejoined: the copy's server is one started
  // again in a lost one's place: it takes the job's settings from the
  // source (the ServerSettings message) instead of from the workers, after the
  // source's learning rate was changed.
  // before_rejoin: what happens on the source before the copy's server
  // rejoins and asks it for the job's settings.
  void start(const std::string& compression, bool rejoined = false,
             const std::function<void()>& before_rejoin = nullptr) {
    const std::string url = "inproc://dt-part-filler-source-" + std::to_string(::getpid());
    source_ = std::make_unique<ServerRequestHandler>(2);
    transport_ = std::make_unique<RequestServer>(
        std::vector<std::string>{url}, 4,
        [this](Message request, RequestServer::Reply reply) { source_->handle(std::move(request), reply); },
        kDefaultMaxMessageBytes);
    copy_ = std::make_unique<ServerRequestHandler>(2);
    PsOptions options;
    options.request_timeout_s = 10;
    filler_ = std::make_unique<PartFiller>(copy_->store(), "localhost", options, TransportSecurity());
    NodeInfo source_node{Role::kServer, 0, "localhost", 1, {url}};
    NodeInfo copy_node{Role::kServer, 1, "localhost", 2, {}};
    filler_->set_servers(1, {source_node, copy_node});
    filler_->on_source_numbers([this](double learning_rate, double rescale_grad) {
      copy_->take_source_optimizer_numbers(learning_rate, rescale_grad);
    });
    for (ServerRequestHandler* server : {source_.get(), copy_.get()}) {
      if (rejoined && server == copy_.get()) continue;
      for (int w : {0, 1}) {
        if (compression != "none") {
          expect_ok(*server, encode_data_request(wire::DataOp::SetGradientCompression, w, {}, compression));
        } else {
          expect_ok(*server, encode_data_request(wire::DataOp::SetOptimizer, w, {},
                                                 optim::OptimizerConfig("sgd").set("learning_rate", 0.1).set("momentum", 0.9).to_json()));
        }
      }
    }
    for (int w : {1, 0}) {
      EncodedData init = encode_data_request(wire::DataOp::Init, w, {SliceSpec{kPart, -1, part_bytes(kPart)}},
                                             "dist_sync");
      const std::vector<float> value(kN, 0.5f);
      std::memcpy(init.slice_data[0], value.data(), part_bytes(kPart));
      expect_ok(*source_, std::move(init));
      // The copy's server knows the job's mode from its own parts' inits.
      EncodedData other = encode_data_request(wire::DataOp::Init, w,
                                              {SliceSpec{PartInfo{PartKey{9, 0, 2}, DType::kFloat32, Shape({2})},
                                                         -1, 2 * sizeof(float)}},
                                              "dist_sync");
      std::memset(other.slice_data[0], 0, 2 * sizeof(float));
      if (!rejoined) expect_ok(*copy_, std::move(other));
    }
    if (rejoined) {
      if (before_rejoin) before_rejoin();
      if (compression == "none") {
        expect_ok(*source_, encode_data_request(wire::DataOp::SetLearningRate, 0, {}, {}, 0.05));
        expect_ok(*source_, encode_data_request(wire::DataOp::SetRescaleGrad, 0, {}, {}, 0.5));
      }
      NodeTable table;
      table.servers = {source_node, copy_node};
      table.your_rank = 1;
      table.joined_running_job = true;
      copy_->apply_settings(filler_->job_settings(table, 5s));
    }
  }
  void TearDown() override {
    filler_.reset();
    transport_.reset();
  }

  static void expect_ok(ServerRequestHandler& server, EncodedData request) {
    Answer answer;
    server.handle(std::move(request.message), answer.reply());
    ASSERT_TRUE(answer.wait());
    EXPECT_EQ(answer.status, 0) << answer.message;
  }
  // A push's answer (it may wait).
  static std::shared_ptr<Answer> push(ServerRequestHandler& server, int worker, int64_t round, int adopt_from = -1) {
    SliceSpec spec{kPart, round, part_bytes(kPart)};
    spec.adopt_from = adopt_from;
    EncodedData e = encode_data_request(wire::DataOp::Push, worker, {spec});
    const auto g = gradient(worker, round);
    std::memcpy(e.slice_data[0], g.data(), part_bytes(kPart));
    auto answer = std::make_shared<Answer>();
    server.handle(std::move(e.message), answer->reply());
    return answer;
  }
  static std::shared_ptr<Answer> pull(ServerRequestHandler& server, int64_t round) {
    auto answer = std::make_shared<Answer>();
    server.handle(encode_data_request(wire::DataOp::Pull, 0, {SliceSpec{kPart, round, 0}}).message,
                  answer->reply());
    EXPECT_TRUE(answer->wait());
    return answer;
  }

  // Rounds 1-3 on the source; round 4 to both, the copy filled from the
  // source meanwhile; rounds 5-7 to both, each pulled from both.
  void fill_and_compare(bool expect_encoded) {
    for (int64_t round = 1; round <= 3; ++round) {
      for (int w : {0, 1}) EXPECT_EQ(push(*source_, w, round)->status, 0);
    }
    std::vector<std::shared_ptr<Answer>> held;
    for (int w : {0, 1}) {
      EXPECT_EQ(push(*source_, w, 4)->status, 0);
      held.push_back(push(*copy_, w, 4, 0));
    }
    // Answered at once, the bytes kept: the first before any fill could be
    // asked for (the second worker had not pushed here yet).
    for (auto& answer : held) {
      ASSERT_TRUE(answer->wait());
      EXPECT_EQ(answer->status, 0) << answer->message;
    }
    EXPECT_TRUE(held[0]->held);
    ASSERT_TRUE(wait_until_not_filling()) << "the copy was not filled";
    for (int64_t round = 5; round <= 7; ++round) {
      for (int w : {1, 0}) {
        EXPECT_EQ(push(*source_, w, round)->status, 0);
        auto answer = push(*copy_, w, round, 0);
        ASSERT_TRUE(answer->wait());
        EXPECT_EQ(answer->status, 0) << answer->message;
      }
      const auto a = pull(*source_, round);
      const auto b = pull(*copy_, round);
      EXPECT_EQ(a->status, 0);
      EXPECT_EQ(b->status, 0) << b->message;
      EXPECT_EQ(a->encoding != 0, expect_encoded);
      EXPECT_EQ(a->encoding, b->encoding);
      EXPECT_EQ(a->bytes, b->bytes) << "round " << round;
    }
  }

  // Until the copy is no longer being filled: it holds the part, or its
  // fill failed (10 s at most); whether it came to that.
  bool wait_until_not_filling() {
    const auto end = std::chrono::steady_clock::now() + 10s;
    while (copy_->store().filling(kPart)) {
      if (std::chrono::steady_clock::now() > end) return false;
      std::this_thread::sleep_for(1ms);
    }
    return true;
  }

  std::unique_ptr<ServerRequestHandler> source_;
  std::unique_ptr<RequestServer> transport_;
  std::unique_ptr<ServerRequestHandler> copy_;
  std::unique_ptr<PartFiller> filler_;
};

TEST_F(PartFillerTest, ACopyFilledOverTheWireTakesTheWeightsAndTheMomentum) {
  start("none");
  fill_and_compare(false);
}

TEST_F(PartFillerTest, ACopyFilledOverTheWireTakesTheResidualOfCompressedPulls) {
  start("2bit:threshold=0.5");
  fill_and_compare(true);
}

// A source lost: the copy is not filled (its pushes were answered as held,
// never as filled), waits for a fresh start, and a pull of it says the part
// was lost.
TEST_F(PartFillerTest, AFillFromALostServerLeavesTheCopyUnfilled) {
  start("none");
  for (int w : {0, 1}) EXPECT_EQ(push(*source_, w, 1)->status, 0);
  filler_->server_lost(0);
  std::vector<std::shared_ptr<Answer>> held;
  for (int w : {0, 1}) held.push_back(push(*copy_, w, 2, 0));
  for (auto& answer : held) {
    ASSERT_TRUE(answer->wait());
    EXPECT_EQ(answer->status, 0) << answer->message;
    EXPECT_TRUE(answer->held);
  }
  // The failed fill starts the part afresh (nothing waits on it).
  ASSERT_TRUE(wait_until_not_filling());
  EXPECT_EQ(push(*copy_, 0, 3, 0)->held, true);
  // Pulls never come to a copy that is not filled, unless its holders are
  // gone: then the part is lost, and the pull says so.
  const auto pulled = pull(*copy_, 1);
  EXPECT_EQ(pulled->status, static_cast<int>(ErrorCode::kPeerLost)) << pulled->message;
}

// A server started again takes the job's settings from another server:
// mode, optimizer (with the learning rate and rescale set since), and
// compression; its copies then compute the source's bytes.
TEST_F(PartFillerTest, ARejoinedServerTakesTheJobsSettingsFromAnotherServer) {
  start("none", true);
  EXPECT_EQ(copy_->store().mode(), ServerKeyStore::Mode::kSync);
  ASSERT_TRUE(copy_->store().has_optimizer());
  EXPECT_EQ(copy_->store().learning_rate(), 0.05);
  EXPECT_EQ(copy_->store().rescale_grad(), 0.5);
  // Changed on the source after the settings came (before the workers
  // knew of the rejoined server): the fill brings it.
  expect_ok(*source_, encode_data_request(wire::DataOp::SetLearningRate, 0, {}, {}, 0.02));
  fill_and_compare(false);
  EXPECT_EQ(copy_->store().learning_rate(), 0.02);
}

// A worker that joined the running job (DT_WORKER_LOSS=continue, started
// again) before a server rejoined: the rejoined server missed its Join
// request, and the scheduler's news of its predecessor's loss must not make
// it refuse the joined worker's pushes as a departed worker's.
TEST_F(PartFillerTest, ARejoinedServerKnowsTheWorkersThatJoinedBeforeIt) {
  start("none", true, [this] {
    source_->store().worker_departed(1, 111);
    auto floor = std::make_shared<Answer>();
    source_->handle(encode_join_question(1), floor->reply());
    ASSERT_TRUE(floor->wait());
    expect_ok(*source_, EncodedData{encode_join(1, 2, 222), {}});
  });
  EXPECT_EQ(source_->settings().joined, (std::vector<std::pair<int, int64_t>>{{1, 222}}));
  // The scheduler tells the rejoined server of the loss of worker 1's
  // predecessor (pid 111) after it took the settings.
  copy_->store().worker_departed(1, 111);
  EXPECT_FALSE(copy_->store().has_departed(1));
  auto kept = push(*copy_, 1, 2, 0);
  ASSERT_TRUE(kept->wait());
  EXPECT_EQ(kept->status, 0) << kept->message;
  EXPECT_TRUE(kept->held);
  // Its own loss still counts.
  copy_->store().worker_departed(1, 222);
  EXPECT_TRUE(copy_->store().has_departed(1));
}

// The joined workers are read as strictly as the rest.
TEST_F(PartFillerTest, ASettingsLineOfJoinedWorkersIsReadStrictly) {
  ServerRequestHandler server(2);
  for (const std::pair<int, int64_t> bad : {std::pair<int, int64_t>{2, 5}, {1, 0}, {1, -5}, {-1, 5}}) {
    JobSettings settings;
    settings.mode = ServerKeyStore::Mode::kSync;
    settings.joined = {bad};
    try {
      server.apply_settings(settings);
      ADD_FAILURE() << "took " << bad.first << ":" << bad.second;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kProtocol) << bad.first << ":" << bad.second;
    }
  }
  JobSettings good;
  good.mode = ServerKeyStore::Mode::kSync;
  good.joined = {{0, 17}, {1, 18}};
  server.apply_settings(good);
  EXPECT_EQ(server.store().joined_workers(), (std::vector<std::pair<int, int64_t>>{{0, 17}, {1, 18}}));
}

TEST_F(PartFillerTest, ARejoinedServerTakesTheCompressionFromAnotherServer) {
  start("2bit:threshold=0.5", true);
  EXPECT_FALSE(copy_->store().has_optimizer());
  fill_and_compare(true);
}

// What worker 0 sets on the rejoined server itself is newer than what a
// fill brings from the source.
TEST_F(PartFillerTest, ALearningRateWorker0SetOnTheRejoinedServerIsKept) {
  start("none", true);
  expect_ok(*copy_, encode_data_request(wire::DataOp::SetLearningRate, 0, {}, {}, 0.03));
  copy_->take_source_optimizer_numbers(0.07, 0.25);
  EXPECT_EQ(copy_->store().learning_rate(), 0.03);
  EXPECT_EQ(copy_->store().rescale_grad(), 0.25);
}

TEST_F(PartFillerTest, SettingsAreAskedForInAServersNameAndReadStrictly) {
  start("none");
  Answer answer;
  source_->handle(encode_server_settings_request(-1), answer.reply());
  ASSERT_TRUE(answer.wait());
  EXPECT_EQ(answer.status, static_cast<int>(ErrorCode::kProtocol)) << answer.message;
  ServerRequestHandler fresh(2);
  // A mode this server does not know, and a learning rate that is no number.
  flatbuffers::FlatBufferBuilder fbb;
  const Frame sideways = Frame::parse(
      make_message(fbb, wire::CreateServerSettingsReply(fbb, static_cast<wire::JobMode>(7))));
  try {
    fresh.apply_settings(decode_server_settings_reply(sideways.expect<wire::ServerSettingsReply>()));
    ADD_FAILURE() << "accepted mode 7";
  } catch (const core::Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kProtocol) << e.what();
  }
  JobSettings fast;
  fast.mode = ServerKeyStore::Mode::kSync;
  fast.optimizer = "{\"optimizer\":\"sgd\"}";
  fast.learning_rate = std::nan("");
  try {
    fresh.apply_settings(fast);
    ADD_FAILURE() << "accepted a learning rate of NaN";
  } catch (const core::Error& e) {
    EXPECT_TRUE(e.code() == ErrorCode::kProtocol || e.code() == ErrorCode::kInvalidArgument) << e.what();
  }
  // A server nobody reaches: job_settings says so, naming it.
  NodeTable table;
  table.servers = {NodeInfo{Role::kServer, 0, "localhost", 1, {"inproc://dt-part-filler-nobody"}},
                   NodeInfo{Role::kServer, 1, "localhost", 2, {}}};
  table.your_rank = 1;
  try {
    filler_->job_settings(table, 200ms);
    ADD_FAILURE() << "settings from nobody";
  } catch (const core::Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kPeerLost);
    EXPECT_NE(std::string(e.what()).find("server 0"), std::string::npos) << e.what();
  }
}

// A PartState request speaks for a server (server_rank >= 0): one in no
// server's name is refused.
TEST_F(PartFillerTest, APartStateInAWorkersNameIsRefused) {
  start("none");
  Answer answer;
  source_->handle(encode_part_state_request(-1, SliceSpec{kPart, 0, 0}), answer.reply());
  ASSERT_TRUE(answer.wait());
  EXPECT_EQ(answer.status, static_cast<int>(ErrorCode::kProtocol)) << answer.message;
}

}  // namespace
}  // namespace dt::ps
