// The codec: every message type round-trips; the decoder rejects truncated,
// corrupted and foreign buffers and names a protocol version mismatch.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "core/error.h"
#include "ps/roles/node_table.h"
#include "ps/transport/frame.h"

namespace dt::ps {
namespace {

using core::Error;
using core::ErrorCode;

Message bytes_message(const std::vector<uint8_t>& bytes) {
  Message out;
  if (!bytes.empty()) std::memcpy(out.grow(bytes.size()), bytes.data(), bytes.size());
  return out;
}

ErrorCode parse_error(Message m) {
  try {
    Frame::parse(std::move(m));
  } catch (const Error& e) {
    return e.code();
  }
  return ErrorCode::kInternal;  // parse accepted it
}

TEST(PsFrame, RegisterRoundTrip) {
  flatbuffers::FlatBufferBuilder fbb;
  auto host = fbb.CreateString("10.0.0.7");
  auto urls = fbb.CreateVectorOfStrings({"tcp://10.0.0.7:4000", "ipc:///tmp/x.ipc"});
  Message m = make_message(fbb, wire::CreateRegister(fbb, wire::Role::Server, host, 4242, urls, -1, 2, 3));
  const Frame f = Frame::parse(std::move(m));
  const auto& r = f.expect<wire::Register>();
  EXPECT_EQ(r.role(), wire::Role::Server);
  EXPECT_EQ(r.host()->str(), "10.0.0.7");
  EXPECT_EQ(r.pid(), 4242);
  ASSERT_EQ(r.data_urls()->size(), 2u);
  EXPECT_EQ(r.data_urls()->Get(1)->str(), "ipc:///tmp/x.ipc");
  EXPECT_EQ(r.requested_rank(), -1);
  EXPECT_EQ(r.num_servers(), 2);
  EXPECT_EQ(r.num_workers(), 3);
  EXPECT_EQ(f.payload_size(), 0u);
}

TEST(PsFrame, NodeTableRoundTrip) {
  NodeTable t;
  t.num_servers = 1;
  t.num_workers = 2;
  t.servers.push_back(NodeInfo{Role::kServer, 0, "h0", 10, {"tcp://h0:1"}});
  t.workers.push_back(NodeInfo{Role::kWorker, 0, "h1", 11, {}});
  t.workers.push_back(NodeInfo{Role::kWorker, 1, "h2", 12, {}});
  t.your_rank = 1;
  t.scheduler_clock_us = 123456789;
  t.scheduler_boot_id = "4b1c5d7e-0000-4000-8000-000000000001";
  flatbuffers::FlatBufferBuilder fbb;
  const Frame f = Frame::parse(make_message(fbb, write_node_table(fbb, t)));
  const NodeTable back = read_node_table(f.expect<wire::NodeTable>());
  EXPECT_EQ(back.your_rank, 1);
  ASSERT_EQ(back.workers.size(), 2u);
  EXPECT_EQ(back.workers[1].pid, 12);
  EXPECT_EQ(back.servers[0].data_urls, std::vector<std::string>{"tcp://h0:1"});
  // The timeline's clock fields (absent from older schedulers: 0 and "").
  EXPECT_EQ(back.scheduler_clock_us, 123456789);
  EXPECT_EQ(back.scheduler_boot_id, t.scheduler_boot_id);
}

TEST(PsFrame, NodeTableThatContradictsItselfIsAProtocolError) {
  NodeTable t;
  t.num_servers = 1;
  t.num_workers = 2;  // but only one listed
  t.servers.push_back(NodeInfo{Role::kServer, 0, "h0", 10, {}});
  t.workers.push_back(NodeInfo{Role::kWorker, 0, "h1", 11, {}});
  flatbuffers::FlatBufferBuilder fbb;
  const Frame f = Frame::parse(make_message(fbb, write_node_table(fbb, t)));
  try {
    read_node_table(f.expect<wire::NodeTable>());
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kProtocol);
  }
}

TEST(PsFrame, ControlMessagesRoundTrip) {
  {
    flatbuffers::FlatBufferBuilder fbb;
    const Frame f = Frame::parse(make_message(fbb, wire::CreateBarrier(fbb, 3, 77)));
    EXPECT_EQ(f.expect<wire::Barrier>().rank(), 3);
    EXPECT_EQ(f.expect<wire::Barrier>().barrier_id(), 77u);
  }
  {
    flatbuffers::FlatBufferBuilder fbb;
    const Frame f = Frame::parse(make_message(fbb, wire::CreateHeartbeat(fbb, wire::Role::Worker, 5)));
    EXPECT_EQ(f.expect<wire::Heartbeat>().rank(), 5);
  }
  {
    flatbuffers::FlatBufferBuilder fbb;
    std::vector<flatbuffers::Offset<wire::LostNode>> lost{
        write_lost_node(fbb, LostNode{Role::kWorker, 1, "hostx", 4242, "connection closed"})};
    const Frame f = Frame::parse(make_message(fbb, wire::CreateHeartbeatReply(fbb, fbb.CreateVector(lost), true)));
    const auto& r = f.expect<wire::HeartbeatReply>();
    EXPECT_TRUE(r.shutdown());
    ASSERT_EQ(r.lost()->size(), 1u);
    EXPECT_EQ(read_lost_node(*r.lost()->Get(0)).message(), "worker 1 (pid 4242 on host hostx) lost: connection closed");
  }
  {
    flatbuffers::FlatBufferBuilder fbb;
    const Frame f = Frame::parse(make_message(fbb, wire::CreateShutdown(fbb, wire::Role::Worker, 0)));
    EXPECT_NE(f.body<wire::Shutdown>(), nullptr);
  }
  EXPECT_NE(Frame::parse(make_ack()).body<wire::Ack>(), nullptr);
}

TEST(PsFrame, ErrorReplyIsThrownByExpect) {
  const Frame f = Frame::parse(make_error_reply(ErrorCode::kPeerLost, "worker 1 lost"));
  try {
    f.expect<wire::NodeTable>();
    FAIL() << "no throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kPeerLost);
    EXPECT_STREQ(e.what(), "worker 1 lost");
  }
}

TEST(PsFrame, UnexpectedBodyIsAProtocolError) {
  const Frame f = Frame::parse(make_ack());
  try {
    f.expect<wire::NodeTable>();
    FAIL() << "no throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kProtocol);
    EXPECT_NE(std::string(e.what()).find("expected a NodeTable message, got Ack"), std::string::npos);
  }
}

TEST(PsFrame, DataRequestPayloadIsAlignedAndInPlace) {
  flatbuffers::FlatBufferBuilder fbb;
  std::vector<int64_t> shape{2, 3};
  std::vector<flatbuffers::Offset<wire::TensorSlice>> slices{
      wire::CreateTensorSlice(fbb, 9, 0, 6, 0, fbb.CreateVector(shape), 4, 0, 24)};
  auto req = wire::CreateDataRequest(fbb, wire::DataOp::PushPull, 1, fbb.CreateVector(slices), 0, 0.5);
  uint8_t* payload = nullptr;
  Message m = make_message(fbb, req, 24, &payload);
  ASSERT_NE(payload, nullptr);
  EXPECT_EQ(static_cast<size_t>(payload - m.data()) % kPayloadAlignment, 0u);
  const float values[6] = {1, 2, 3, 4, 5, 6};
  std::memcpy(payload, values, sizeof values);
  const Frame f = Frame::parse(std::move(m));
  const auto& r = f.expect<wire::DataRequest>();
  EXPECT_EQ(r.op(), wire::DataOp::PushPull);
  EXPECT_DOUBLE_EQ(r.number(), 0.5);
  const uint8_t* data = f.slice_data(*r.slices()->Get(0));
  EXPECT_EQ(data, f.payload());  // read in place, not copied
  float back[6];
  std::memcpy(back, data, sizeof back);
  EXPECT_EQ(back[5], 6.0f);
}

TEST(PsFrame, SliceOutsideThePayloadIsRejected) {
  flatbuffers::FlatBufferBuilder fbb;
  std::vector<flatbuffers::Offset<wire::TensorSlice>> slices{
      wire::CreateTensorSlice(fbb, 9, 0, 6, 0, 0, 0, 8, UINT64_MAX - 4)};
  auto reply = wire::CreateDataReply(fbb, 0, 0, fbb.CreateVector(slices));
  uint8_t* payload = nullptr;
  const Frame f = Frame::parse(make_message(fbb, reply, 16, &payload));
  try {
    f.slice_data(*f.expect<wire::DataReply>().slices()->Get(0));
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kProtocol);
  }
}

TEST(PsFrame, EveryTruncationIsRejected) {
  flatbuffers::FlatBufferBuilder fbb;
  auto host = fbb.CreateString("host");
  const Message full = make_message(fbb, wire::CreateRegister(fbb, wire::Role::Worker, host, 1, 0, 0, 1, 1));
  for (size_t n = 0; n < full.size(); ++n) {
    Message m = full.copy();
    // Keep the header's size but cut the body, or cut inside the header.
    std::vector<uint8_t> bytes(m.data(), m.data() + n);
    EXPECT_EQ(parse_error(bytes_message(bytes)), ErrorCode::kProtocol) << "length " << n;
  }
}

TEST(PsFrame, CorruptedBuffersAreRejectedOrStillValid) {
  flatbuffers::FlatBufferBuilder fbb;
  auto host = fbb.CreateString("host");
  auto urls = fbb.CreateVectorOfStrings({"tcp://a:1"});
  const Message full = make_message(fbb, wire::CreateRegister(fbb, wire::Role::Server, host, 1, urls, -1, 1, 1));
  int rejected = 0;
  for (size_t i = 0; i < full.size(); ++i) {
    for (uint8_t flip : {uint8_t{0x01}, uint8_t{0x80}, uint8_t{0xff}}) {
      Message m = full.copy();
      m.mutable_data()[i] ^= flip;
      try {
        const Frame f = Frame::parse(std::move(m));
        // Accepted: the Verifier vouched for it, so reading it must be safe.
        if (const auto* r = f.body<wire::Register>()) {
          if (r->host() != nullptr) (void)r->host()->str();
        }
      } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::kProtocol);
        ++rejected;
      }
    }
  }
  EXPECT_GT(rejected, 0);
}

TEST(PsFrame, ForeignBytesAreRejected) {
  EXPECT_EQ(parse_error(bytes_message({})), ErrorCode::kProtocol);
  EXPECT_EQ(parse_error(bytes_message({'G', 'E', 'T', ' ', '/', ' ', 'H', 'T', 'T', 'P', '/', '1', '.', '1'})),
            ErrorCode::kProtocol);
  std::vector<uint8_t> huge_size{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0};
  EXPECT_EQ(parse_error(bytes_message(huge_size)), ErrorCode::kProtocol);
}

TEST(PsFrame, VersionMismatchNamesBothVersions) {
  flatbuffers::FlatBufferBuilder fbb;
  auto envelope = wire::CreateEnvelope(fbb, kProtocolVersion + 6, wire::Body::Ack, wire::CreateAck(fbb).Union());
  wire::FinishEnvelopeBuffer(fbb, envelope);
  Message m = encode_frame(fbb.GetBufferPointer(), fbb.GetSize(), 0, nullptr);
  try {
    Frame::parse(std::move(m));
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kProtocol);
    const std::string text = e.what();
    EXPECT_NE(text.find("version " + std::to_string(kProtocolVersion + 6)), std::string::npos) << text;
    EXPECT_NE(text.find("version " + std::to_string(kProtocolVersion)), std::string::npos) << text;
  }
}

}  // namespace
}  // namespace dt::ps
