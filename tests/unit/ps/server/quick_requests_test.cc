// Which server requests the transport handles where it received them
// (ps/server/quick_requests.h): small pushes and pulls, nothing else.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "ps/server/quick_requests.h"
#include "ps/transport/data_codec.h"
#include "ps/transport/frame.h"

namespace dt::ps {
namespace {

SliceSpec part(uint64_t key, int64_t elements, core::DType dtype = core::DType::kFloat32, size_t data_bytes = 0) {
  SliceSpec s;
  s.info.part = PartKey{key, 0, elements};
  s.info.dtype = dtype;
  s.info.shape = core::Shape({elements});
  s.round = 1;
  s.data_bytes = data_bytes;
  return s;
}

Message request(wire::DataOp op, const std::vector<SliceSpec>& slices) {
  EncodedData encoded = encode_data_request(op, 0, slices);
  for (size_t i = 0; i < slices.size(); ++i) {
    if (encoded.slice_data[i] != nullptr) std::memset(encoded.slice_data[i], 0, slices[i].data_bytes);
  }
  return std::move(encoded.message);
}

TEST(QuickRequests, SmallPushesAndPullsAreQuick) {
  EXPECT_TRUE(is_quick_request(request(wire::DataOp::Push, {part(1, 1024, core::DType::kFloat32, 4096)})));
  EXPECT_TRUE(is_quick_request(request(wire::DataOp::Pull, {part(1, 1024)})));
  EXPECT_TRUE(is_quick_request(request(wire::DataOp::PushPull, {part(1, 1024, core::DType::kFloat32, 4096)})));
  // Several small keys fused into one message, within the bound together.
  EXPECT_TRUE(is_quick_request(request(wire::DataOp::Pull, {part(1, 4096), part(2, 4096), part(3, 4096)})));
}

TEST(QuickRequests, WhatMovesMuchIsNot) {
  const int64_t bound_elements = static_cast<int64_t>(kQuickRequestBytes / 4);
  EXPECT_TRUE(is_quick_request(request(wire::DataOp::Pull, {part(1, bound_elements)})));
  // A pull request is small whatever it asks for: what its reply copies counts.
  EXPECT_FALSE(is_quick_request(request(wire::DataOp::Pull, {part(1, bound_elements + 1)})));
  EXPECT_FALSE(is_quick_request(request(wire::DataOp::Pull, {part(1, 1 << 24)})));
  // Small parts that add up past the bound.
  EXPECT_FALSE(is_quick_request(request(wire::DataOp::Pull, {part(1, bound_elements / 2), part(2, bound_elements / 2),
                                                             part(3, 16)})));
  // The element size counts: float64 parts move twice the bytes.
  EXPECT_FALSE(is_quick_request(request(wire::DataOp::Pull, {part(1, bound_elements, core::DType::kFloat64)})));
}

TEST(QuickRequests, OtherOpsAndNewCopiesGoToThePool) {
  EXPECT_FALSE(is_quick_request(request(wire::DataOp::Init, {part(1, 16, core::DType::kFloat32, 64)})));
  EXPECT_FALSE(is_quick_request(encode_data_request(wire::DataOp::SetLearningRate, 0, {}, {}, 0.1).message));
  SliceSpec adopting = part(1, 16, core::DType::kFloat32, 64);
  adopting.adopt_from = 1;
  EXPECT_FALSE(is_quick_request(request(wire::DataOp::Push, {adopting})));
  EXPECT_FALSE(is_quick_request(request(wire::DataOp::Pull, {})));
  EXPECT_FALSE(is_quick_request(make_ack()));
}

TEST(QuickRequests, MalformedIsNotQuick) {
  EXPECT_FALSE(is_quick_request(Message()));
  Message junk = Message::with_capacity(64);
  std::memset(junk.grow(64), 0xff, 64);
  EXPECT_FALSE(is_quick_request(junk));
  // Cut short: the verifier refuses it, the pool's handler answers the error.
  Message whole = request(wire::DataOp::Pull, {part(1, 16)});
  Message cut = Message::with_capacity(whole.size());
  std::memcpy(cut.grow(whole.size() - 8), whole.data(), whole.size() - 8);
  EXPECT_FALSE(is_quick_request(cut));
}

TEST(QuickRequests, BorrowingLeavesTheMessageWithItsOwner) {
  const Message kept = request(wire::DataOp::Pull, {part(7, 16)});
  const size_t size = kept.size();
  {
    const Frame frame = Frame::borrow(kept);
    const auto* data = frame.body<wire::DataRequest>();
    ASSERT_NE(data, nullptr);
    EXPECT_EQ(data->slices()->Get(0)->key(), 7u);
    EXPECT_EQ(frame.message().get(), nullptr);
  }
  ASSERT_NE(kept.get(), nullptr);
  EXPECT_EQ(kept.size(), size);
  EXPECT_NO_THROW(Frame::parse(kept.copy()).expect<wire::DataRequest>());
}

}  // namespace
}  // namespace dt::ps
