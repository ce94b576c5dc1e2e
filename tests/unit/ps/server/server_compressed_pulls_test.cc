// Compressed pulls on the server (issue 16, "both directions"): a dist_sync
// part without an optimizer encodes each round's sum once, with its own
// residual, and answers every pull of the round with those bytes; weights,
// dist_async values and sums the mode cannot hold go in full. The store is
// driven directly; the request handler's part (deferred replies, PS_RESEND
// copies) through handle().
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "optim/optimizer_config.h"
#include "ps/compression/compression_mode.h"
#include "ps/compression/gradient_codec.h"
#include "ps/server/key_store.h"
#include "ps/server/request_handler.h"
#include "ps/transport/data_codec.h"
#include "ps/transport/frame.h"
#include "ps/transport/superseded_reply.h"

namespace dt::ps {
namespace {

using compression::CompressionConfig;
using compression::CompressionMode;
using compression::GradientCodec;
using core::DType;
using core::Error;
using core::Shape;

PartInfo info(uint64_t key, int64_t n) { return PartInfo{PartKey{key, 0, n}, DType::kFloat32, Shape({n})}; }
size_t bytes(const std::vector<float>& v) { return v.size() * sizeof(float); }

ServerKeyStore::PushDone ignore_done() {
  return [](const Error* e) { ASSERT_EQ(e, nullptr) << e->what(); };
}

// What one pull was answered with.
struct Pulled {
  bool done = false;
  std::vector<uint8_t> data;
  uint8_t encoding = 0;
  std::shared_ptr<const std::vector<uint8_t>> shared;
  ServerKeyStore::PullDone callback() {
    return [this](const Error* e, const ServerKeyStore::PullAnswer& a) {
      ASSERT_EQ(e, nullptr) << e->what();
      done = true;
      const auto* begin = static_cast<const uint8_t*>(a.data);
      data.assign(begin, begin + a.bytes);
      encoding = a.encoding;
      shared = a.shared;
    };
  }
  // The float32 values: decoded with codec when encoded.
  std::vector<float> values(const GradientCodec& codec, size_t n) const {
    std::vector<float> out(n, 0.0f);
    if (encoding == 0) {
      EXPECT_EQ(data.size(), n * sizeof(float));
      std::memcpy(out.data(), data.data(), data.size());
    } else {
      EXPECT_EQ(encoding, static_cast<uint8_t>(codec.config().mode));
      codec.decode_add(data.data(), data.size(), out.data(), n);
    }
    return out;
  }
};

Pulled pull(ServerKeyStore& store, uint64_t key, int64_t n, int64_t round) {
  Pulled p;
  store.pull(info(key, n), round, p.callback());
  EXPECT_TRUE(p.done) << "round " << round << " should have applied";
  return p;
}

void init_all(ServerKeyStore& store, uint64_t key, const std::vector<float>& value) {
  for (int w = store.num_workers() - 1; w >= 0; --w) store.init(w, info(key, value.size()), value.data(), bytes(value));
}

// Pushes one round: worker w's gradient is grads[w].
void push_round(ServerKeyStore& store, uint64_t key, int64_t round, const std::vector<std::vector<float>>& grads) {
  for (size_t w = 0; w < grads.size(); ++w) {
    store.push(static_cast<int>(w), info(key, grads[w].size()), round, grads[w].data(), bytes(grads[w]),
               ignore_done());
  }
}

TEST(PsCompressedPulls, WhatARoundsPullDidNotSendComesInTheNextRound) {
  const auto config = CompressionConfig::parse("2bit:threshold=1,magnitude=threshold");  // MXNet's +-threshold
  const GradientCodec codec(config);
  ServerKeyStore store(ServerKeyStore::Mode::kSync, 2);
  store.set_compression(config);
  init_all(store, 5, {9, 9, 9, 9});
  EXPECT_TRUE(store.pulls_may_be_encoded());
  EXPECT_EQ(store.pull_residual(5, 0), nullptr) << "no round encoded yet";

  // Round 1 sums to {0.5, -0.75, 1.5, 2}: 2bit at threshold 1 sends {0, 0, 1, 1}.
  push_round(store, 5, 1, {{0.25f, -0.5f, 1.0f, 2.0f}, {0.25f, -0.25f, 0.5f, 0.0f}});
  const Pulled r1 = pull(store, 5, 4, 1);
  EXPECT_EQ(r1.encoding, static_cast<uint8_t>(CompressionMode::k2Bit));
  EXPECT_EQ(r1.data.size(), 4u) << "4 values in one 32-bit word";
  EXPECT_EQ(r1.values(codec, 4), (std::vector<float>{0, 0, 1, 1}));
  ASSERT_NE(store.pull_residual(5, 0), nullptr);
  EXPECT_EQ(*store.pull_residual(5, 0), (std::vector<float>{0.5f, -0.75f, 0.5f, 1.0f}));

  // Round 2 sums to {0.5, -0.5, 0, 0}; with the residual {1, -1.25, 0.5, 1}:
  // the 0.5s that round 1 kept back now cross the threshold.
  push_round(store, 5, 2, {{0.25f, -0.25f, 0.0f, 0.0f}, {0.25f, -0.25f, 0.0f, 0.0f}});
  const Pulled r2 = pull(store, 5, 4, 2);
  EXPECT_EQ(r2.values(codec, 4), (std::vector<float>{1, -1, 0, 1}));
  EXPECT_EQ(*store.pull_residual(5, 0), (std::vector<float>{0.0f, -0.25f, 0.5f, 0.0f}));
  // Nothing lost, only delayed: what was sent plus what is kept is what was summed.
  const std::vector<float> sent1 = r1.values(codec, 4), sent2 = r2.values(codec, 4);
  const std::vector<float> summed = {1.0f, -1.25f, 1.5f, 2.0f};
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(sent1[i] + sent2[i] + (*store.pull_residual(5, 0))[i], summed[i]) << i;
}

TEST(PsCompressedPulls, EveryPullOfARoundGetsTheSameBytesAndTheResidualMovesOncePerRound) {
  const auto config = CompressionConfig::parse("topk:fraction=0.25");
  ServerKeyStore store(ServerKeyStore::Mode::kSync, 2);
  store.set_compression(config);
  const int64_t n = 16;
  init_all(store, 1, std::vector<float>(n, 0.0f));
  std::vector<float> g0(n), g1(n);
  for (int64_t i = 0; i < n; ++i) {
    g0[i] = 0.1f * float(i) - 0.7f;
    g1[i] = 0.05f * float(i * i % 11);
  }
  // One worker's pull waits for the round, the other's comes after it.
  Pulled waiting;
  store.pull(info(1, n), 1, waiting.callback());
  EXPECT_FALSE(waiting.done);
  push_round(store, 1, 1, {g0, g1});
  ASSERT_TRUE(waiting.done);
  const std::vector<float> residual = *store.pull_residual(1, 0);
  const Pulled later = pull(store, 1, n, 1);
  const Pulled latest = pull(store, 1, n, 0);  // round <= 0: the latest round's
  const Pulled again = pull(store, 1, n, 1);
  EXPECT_EQ(waiting.data.size(), 8u * 4) << "topk 25% of 16: 4 (index, value) pairs";
  for (const Pulled* p : {&later, &latest, &again}) {
    EXPECT_EQ(p->data, waiting.data);
    EXPECT_EQ(p->encoding, waiting.encoding);
    EXPECT_EQ(p->shared, waiting.shared) << "one encoding per round, shared by every pull";
  }
  EXPECT_EQ(*store.pull_residual(1, 0), residual) << "pulls must not move the residual";

  push_round(store, 1, 2, {g0, g1});
  const Pulled round2 = pull(store, 1, n, 2);
  EXPECT_NE(round2.data, waiting.data) << "round 2 sends what round 1 kept back";
  EXPECT_NE(*store.pull_residual(1, 0), residual);
}

TEST(PsCompressedPulls, WeightsAsyncValuesAndOtherDtypesGoInFull) {
  const auto config = CompressionConfig::parse("fp16");
  const GradientCodec codec(config);
  const std::vector<float> init = {0.1f, 0.2f, 0.3f};
  const std::vector<std::vector<float>> grads = {{1.0f / 3, 0, 0}, {0, 0, 1e-9f}};
  {
    // Round 0 holds rank 0's init value: weights, not a sum of gradients.
    ServerKeyStore store(ServerKeyStore::Mode::kSync, 2);
    store.set_compression(config);
    init_all(store, 1, init);
    const Pulled initial = pull(store, 1, 3, 0);
    EXPECT_EQ(initial.encoding, 0);
    EXPECT_EQ(initial.values(codec, 3), init);
    push_round(store, 1, 1, grads);
    const Pulled sum = pull(store, 1, 3, 1);
    EXPECT_EQ(sum.encoding, static_cast<uint8_t>(CompressionMode::kFp16));
    EXPECT_EQ(sum.data.size(), 6u);
    EXPECT_NE(sum.values(codec, 3)[0], 1.0f / 3) << "fp16 cannot hold 1/3 exactly";
    // An optimizer set now: the stored value is a weight from here on, and no
    // encoding of an earlier round answers a pull any more.
    store.set_optimizer(optim::OptimizerConfig("sgd").set("learning_rate", 0.5).set("wd", 0.0));
    EXPECT_FALSE(store.pulls_may_be_encoded());
    EXPECT_EQ(pull(store, 1, 3, 1).encoding, 0);
    push_round(store, 1, 2, grads);
    const Pulled weights = pull(store, 1, 3, 2);
    EXPECT_EQ(weights.encoding, 0) << "weights are never lossy";
    EXPECT_EQ(weights.data.size(), 12u);
  }
  {
    ServerKeyStore store(ServerKeyStore::Mode::kAsync, 2);
    store.set_compression(config);
    EXPECT_FALSE(store.pulls_may_be_encoded());
    init_all(store, 1, init);
    store.push(1, info(1, 3), -1, grads[0].data(), bytes(grads[0]), ignore_done());
    const Pulled value = pull(store, 1, 3, 0);
    EXPECT_EQ(value.encoding, 0) << "dist_async: no rounds to encode once for";
    EXPECT_EQ(value.values(codec, 3), grads[0]);
  }
  {
    ServerKeyStore store(ServerKeyStore::Mode::kSync, 1);
    store.set_compression(config);
    const PartInfo doubles{PartKey{2, 0, 2}, DType::kFloat64, Shape({2})};
    const std::vector<double> value = {1.0 / 3, 2.0 / 3};
    store.init(0, doubles, value.data(), sizeof(double) * 2);
    store.push(0, doubles, 1, value.data(), sizeof(double) * 2, ignore_done());
    Pulled p;
    store.pull(doubles, 1, p.callback());
    ASSERT_TRUE(p.done);
    EXPECT_EQ(p.encoding, 0) << "only float32 is compressed";
    EXPECT_EQ(p.data.size(), sizeof(double) * 2);
  }
}

TEST(PsCompressedPulls, ASumTheModeCannotHoldGoesInFullAndLeavesNothingToCarry) {
  const auto config = CompressionConfig::parse("fp16");
  const GradientCodec codec(config);
  ServerKeyStore store(ServerKeyStore::Mode::kSync, 2);
  store.set_compression(config);
  init_all(store, 3, {0, 0});
  // Round 1 leaves a residual (1/3 in fp16); round 2's sum passes fp16's 65504.
  push_round(store, 3, 1, {{1.0f / 3, 0}, {0, 0}});
  (void)pull(store, 3, 2, 1);
  ASSERT_NE((*store.pull_residual(3, 0))[0], 0.0f);
  const float carried = (*store.pull_residual(3, 0))[0];
  push_round(store, 3, 2, {{40000, 1}, {40000, 2}});
  const Pulled full = pull(store, 3, 2, 2);
  EXPECT_EQ(full.encoding, 0);
  EXPECT_EQ(full.values(codec, 2), (std::vector<float>{80000.0f + carried, 3.0f})) << "sent with the residual";
  EXPECT_EQ(*store.pull_residual(3, 0), (std::vector<float>{0, 0}));
  push_round(store, 3, 3, {{0.5f, 0.25f}, {0.5f, 0.25f}});
  const Pulled after = pull(store, 3, 2, 3);
  EXPECT_EQ(after.encoding, static_cast<uint8_t>(CompressionMode::kFp16));
  EXPECT_EQ(after.values(codec, 2), (std::vector<float>{1.0f, 0.5f}));
}

TEST(PsCompressedPulls, TheResidualAndEncodingCountAgainstTheMemoryLimit) {
  ServerKeyStore store(ServerKeyStore::Mode::kSync, 1);
  store.set_compression(CompressionConfig::parse("2bit:magnitude=threshold"));  // codes alone: n / 4 bytes
  const int64_t n = 1024;
  init_all(store, 1, std::vector<float>(n, 0.0f));
  const uint64_t before = store.memory_used();
  EXPECT_EQ(before, 2u * n * sizeof(float));
  const std::vector<float> g(n, 1.0f);
  store.push(0, info(1, n), 1, g.data(), bytes(g), ignore_done());
  // The residual (4n bytes) and the 2-bit encoding (n / 4 bytes).
  EXPECT_EQ(store.memory_used(), before + n * sizeof(float) + n / 4);
  store.push(0, info(1, n), 2, g.data(), bytes(g), ignore_done());
  EXPECT_EQ(store.memory_used(), before + n * sizeof(float) + n / 4) << "counted once per part";
}

// ---- through the request handler -------------------------------------------

// A request handed to the handler directly (no connection): its replies.
struct Replies {
  std::vector<std::optional<Message>> messages;
  RequestServer::Reply reply() {
    const size_t index = messages.size();
    messages.emplace_back();
    return [this, index](Message m) { messages[index] = std::move(m); };
  }
};

Message request(wire::DataOp op, int worker, int64_t round, const std::vector<float>* values, bool may_resend,
                const std::string& text = {}, int64_t n = 64) {
  const PartInfo part = info(9, n);
  EncodedData e = encode_data_request(op, worker, {SliceSpec{part, round, values ? part_bytes(part) : 0}}, text, 0,
                                      may_resend);
  if (values) std::memcpy(e.slice_data[0], values->data(), part_bytes(part));
  return std::move(e.message);
}

// The pulled slice of a reply: (encoding, bytes); status must be OK.
std::pair<uint8_t, std::vector<uint8_t>> pulled_slice(const Message& m) {
  const Frame frame = Frame::parse(m.copy());
  const auto& data = frame.expect<wire::DataReply>();
  EXPECT_EQ(data.status(), 0) << (data.message() ? data.message()->str() : "");
  if (!data.slices() || data.slices()->size() != 1) {
    ADD_FAILURE() << "expected one slice";
    return {};
  }
  const DecodedSlice s = decode_slice(frame, data.slices()->Get(0));
  return {s.encoding, std::vector<uint8_t>(s.data, s.data + s.data_bytes)};
}

TEST(PsCompressedPulls, AResentPullGetsTheSameBytesAndNeverMovesTheResidual) {
  ServerRequestHandler handler(2);
  Replies replies;
  const std::string spec = "2bit:threshold=0.5,magnitude=threshold";  // codes alone: 64 values in 16 bytes
  for (int w = 0; w < 2; ++w) {
    const std::vector<float> zeros(64, 0.0f);
    handler.handle(request(wire::DataOp::SetGradientCompression, w, -1, nullptr, false, spec), replies.reply());
    handler.handle(request(wire::DataOp::Init, w, -1, &zeros, true, "dist_sync"), replies.reply());
  }
  std::vector<float> g0(64), g1(64);
  for (size_t i = 0; i < 64; ++i) {
    g0[i] = 0.03f * float(i) - 0.9f;
    g1[i] = 0.2f * float(i % 5) - 0.4f;
  }
  // Worker 1's pull of round 1 waits; its reply is late, so it sends the
  // same pull again: the first copy is answered as superseded, the resend
  // gets the round's encoding when worker 1's push completes the round.
  handler.handle(request(wire::DataOp::Push, 0, 1, &g0, true), replies.reply());
  handler.handle(request(wire::DataOp::Pull, 1, 1, nullptr, true), replies.reply());
  const size_t first_copy = replies.messages.size() - 1;
  handler.handle(request(wire::DataOp::Pull, 1, 1, nullptr, true), replies.reply());
  const size_t resend = replies.messages.size() - 1;
  ASSERT_TRUE(replies.messages[first_copy].has_value());
  EXPECT_TRUE(is_superseded_reply(*replies.messages[first_copy]));
  EXPECT_FALSE(replies.messages[resend].has_value());
  handler.handle(request(wire::DataOp::Push, 1, 1, &g1, true), replies.reply());
  ASSERT_TRUE(replies.messages[resend].has_value());
  const auto answered = pulled_slice(*replies.messages[resend]);
  EXPECT_EQ(answered.first, static_cast<uint8_t>(CompressionMode::k2Bit));
  EXPECT_EQ(answered.second.size(), 16u) << "64 values in 4 words";
  const std::vector<float> residual = *handler.store().pull_residual(9, 0);

  // Resent again after the round (its reply lost on the way), and worker 0's own pull.
  for (int w : {1, 1, 0}) {
    handler.handle(request(wire::DataOp::Pull, w, 1, nullptr, true), replies.reply());
    ASSERT_TRUE(replies.messages.back().has_value());
    EXPECT_EQ(pulled_slice(*replies.messages.back()), answered) << "worker " << w;
  }
  EXPECT_EQ(*handler.store().pull_residual(9, 0), residual);

  // What worker 1 decodes: the rank-order sum, plus nothing kept before,
  // encoded once; the residual holds the rest.
  const GradientCodec codec(CompressionConfig::parse(spec));
  std::vector<float> decoded(64, 0.0f);
  codec.decode_add(answered.second.data(), answered.second.size(), decoded.data(), 64);
  for (size_t i = 0; i < 64; ++i) EXPECT_EQ(decoded[i] + residual[i], g0[i] + g1[i]) << i;
}

TEST(PsCompressedPulls, AFusedPullOfEncodedAndFullPartsKeepsEachInItsPlace) {
  // One message pulling a compressed float32 key and a float64 key (sent
  // in full) in either order: the reply is assembled from answers of
  // different sizes.
  ServerRequestHandler handler(1);
  Replies replies;
  handler.handle(request(wire::DataOp::SetGradientCompression, 0, -1, nullptr, false, "fp16"), replies.reply());
  const PartInfo floats = info(1, 5);
  const PartInfo doubles{PartKey{2, 0, 3}, DType::kFloat64, Shape({3})};
  const std::vector<float> f = {1, 2, 3, 4, 5};
  const std::vector<double> d = {0.5, 0.25, 0.125};
  for (wire::DataOp op : {wire::DataOp::Init, wire::DataOp::Push}) {
    EncodedData e = encode_data_request(op, 0, {SliceSpec{floats, op == wire::DataOp::Push ? 1 : -1, 20},
                                                SliceSpec{doubles, op == wire::DataOp::Push ? 1 : -1, 24}},
                                        op == wire::DataOp::Init ? "dist_sync" : "");
    std::memcpy(e.slice_data[0], f.data(), 20);
    std::memcpy(e.slice_data[1], d.data(), 24);
    handler.handle(std::move(e.message), replies.reply());
    ASSERT_TRUE(replies.messages.back().has_value());
  }
  for (bool floats_first : {true, false}) {
    const std::vector<SliceSpec> specs = floats_first
                                             ? std::vector<SliceSpec>{{floats, 1, 0}, {doubles, 1, 0}}
                                             : std::vector<SliceSpec>{{doubles, 1, 0}, {floats, 1, 0}};
    handler.handle(std::move(encode_data_request(wire::DataOp::Pull, 0, specs).message), replies.reply());
    ASSERT_TRUE(replies.messages.back().has_value());
    const Frame frame = Frame::parse(replies.messages.back()->copy());
    const auto& data = frame.expect<wire::DataReply>();
    ASSERT_EQ(data.status(), 0);
    ASSERT_EQ(data.slices()->size(), 2u);
    const DecodedSlice a = decode_slice(frame, data.slices()->Get(floats_first ? 0 : 1));
    const DecodedSlice b = decode_slice(frame, data.slices()->Get(floats_first ? 1 : 0));
    EXPECT_EQ(a.encoding, static_cast<uint8_t>(CompressionMode::kFp16));
    ASSERT_EQ(a.data_bytes, 10u);
    std::vector<float> got(5, 0.0f);
    GradientCodec(CompressionConfig::parse("fp16")).decode_add(a.data, a.data_bytes, got.data(), 5);
    EXPECT_EQ(got, f);
    EXPECT_EQ(b.encoding, 0);
    ASSERT_EQ(b.data_bytes, 24u);
    std::vector<double> got_d(3);
    std::memcpy(got_d.data(), b.data, 24);
    EXPECT_EQ(got_d, d);
  }
}

}  // namespace
}  // namespace dt::ps
