// Refusals and failures in a job on threads: async training with updates on
// the workers, a worker leaving mid-round, malformed requests.
#include <gtest/gtest.h>

#include "dist_kvstore_test_util.h"

namespace dt::ps {
namespace {

using namespace dist_kvstore_test;

TEST(PsDataInproc, AsyncTrainingRefusesUpdatesOnTheWorkers) {
  InprocJob job("async-rule", 1, 1);
  {
    std::shared_ptr<kvstore::KVStore> kv(job.worker("dist_async", 0));
    train::TrainerOptions options;
    options.update_on_kvstore = 0;
    try {
      train::Trainer trainer(lenet(), sgd(0.05), kv, options);
      FAIL() << "dist_async with the update on the workers was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find("async mode"), std::string::npos) << e.what();
    }
    // The default puts the update on the servers.
    train::Trainer trainer(lenet(), sgd(0.05), kv);
    EXPECT_TRUE(trainer.update_on_kvstore());
  }
  for (const auto& outcome : job.outcomes()) EXPECT_EQ(outcome, "");
}

TEST(PsDataInproc, WorkerLeavingMidRoundFailsTheOtherWithPeerLost) {
  InprocJob job("lost", 1, 2);
  std::promise<void> initialized;
  auto survivor = std::async(std::launch::async, [&] {
    auto kv = job.worker("dist_sync", 0);
    kv->init({1}, {array({0})});
    initialized.set_value();
    NDArray out = array({0});
    const auto start = std::chrono::steady_clock::now();
    try {
      // Worker 1 never pushes round 1: the pull waits until it is lost.
      kv->pushpull({1}, {array({1})}, {out}, 0);
      ADD_FAILURE() << "the round completed without worker 1";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kPeerLost) << e.what();
      EXPECT_NE(std::string(e.what()).find("worker 1"), std::string::npos) << e.what();
    }
    EXPECT_LT(std::chrono::steady_clock::now() - start, 4s);
  });
  {
    // Worker 1 joins and, once worker 0 has initialised the key, vanishes
    // without saying goodbye: its heartbeats stop as a crashed process's
    // would.
    JobConfig job1 = inproc_job(inproc_url("lost"), Role::kWorker, 1, 2, 1);
    ClusterMember member(job1, fast_options());
    ASSERT_EQ(initialized.get_future().wait_for(20s), std::future_status::ready);
  }
  ASSERT_EQ(survivor.wait_for(20s), std::future_status::ready);
  survivor.get();
  for (const auto& outcome : job.outcomes()) EXPECT_NE(outcome.find("worker 1"), std::string::npos) << outcome;
}

TEST(PsDataInproc, MalformedRequestsAreRejectedAndTheServerKeepsServing) {
  ServerRequestHandler server(1);
  const std::string url = inproc_url("malformed");
  RequestServer transport({url}, 4, [&](Message m, RequestServer::Reply r) { server.handle(std::move(m), r); },
                          kDefaultMaxMessageBytes);
  RequestClient client(url, 5s);
  auto status_of = [&](Message request) {
    Frame reply = Frame::parse(client.call(std::move(request), 5s));
    return reply.expect<wire::DataReply>().status();
  };
  auto raw = [](const std::vector<uint8_t>& bytes) {
    Message m = Message::with_capacity(bytes.size());
    if (!bytes.empty()) std::memcpy(m.grow(bytes.size()), bytes.data(), bytes.size());
    return m;
  };
  const int protocol = static_cast<int>(ErrorCode::kProtocol);
  EXPECT_EQ(status_of(raw({})), protocol);
  EXPECT_EQ(status_of(raw({0xff, 0xff, 0xff, 0x7f, 1, 2, 3})), protocol);
  // A valid init, then the same frame truncated and with a slice pointing
  // outside its payload.
  const PartInfo info{PartKey{1, 0, 2}, DType::kFloat32, Shape({2})};
  EncodedData init = encode_data_request(wire::DataOp::Init, 0, {SliceSpec{info, -1, 8}}, "dist_sync");
  const float value[2] = {4, 5};
  std::memcpy(init.slice_data[0], value, sizeof value);
  std::vector<uint8_t> bytes(init.message.data(), init.message.data() + init.message.size());
  EXPECT_EQ(status_of(raw(std::vector<uint8_t>(bytes.begin(), bytes.begin() + bytes.size() / 2))), protocol);
  EXPECT_EQ(status_of(raw(std::vector<uint8_t>(bytes.begin(), bytes.end() - 4))), protocol);
  // A part outside its tensor.
  const PartInfo outside{PartKey{1, 0, 3}, DType::kFloat32, Shape({2})};
  EXPECT_EQ(status_of(encode_data_request(wire::DataOp::Pull, 0, {SliceSpec{outside, 0, 0}}).message), protocol);
  EXPECT_EQ(status_of(std::move(init.message)), 0);
  EncodedData pull = encode_data_request(wire::DataOp::Pull, 0, {SliceSpec{info, 0, 0}});
  Frame reply = Frame::parse(client.call(std::move(pull.message), 5s));
  const auto& data = reply.expect<wire::DataReply>();
  ASSERT_EQ(data.status(), 0);
  const DecodedSlice slice = decode_slice(reply, data.slices()->Get(0));
  float got[2];
  std::memcpy(got, slice.data, sizeof got);
  EXPECT_EQ(got[0], 4.0f);
  EXPECT_EQ(got[1], 5.0f);
}


}  // namespace
}  // namespace dt::ps
