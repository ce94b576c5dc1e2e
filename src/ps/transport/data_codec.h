// The data plane's messages (DataRequest / DataReply) as plain values:
// building a frame whose tensor bytes the caller writes straight into the
// nng message (no intermediate buffer), and reading a verified frame's
// slices back with every field checked (a bad slice is Error(kProtocol), so
// the server answers it and keeps serving).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "optim/update_numbers.h"
#include "ps/transport/frame.h"
#include "ps/transport/message.h"
#include "ps/transport/tensor_part.h"

namespace dt::ps {

// An optional double field (`x: double = null`) to and from the wire.
// flatbuffers::Optional is std::optional where the build has it, its own
// class elsewhere: these convert either way.
inline flatbuffers::Optional<double> wire_number(const std::optional<double>& value) {
  return value ? flatbuffers::Optional<double>(*value) : flatbuffers::Optional<double>();
}
template <class WireOptional>
std::optional<double> read_number(const WireOptional& value) {
  return value.has_value() ? std::optional<double>(value.value()) : std::nullopt;
}

// One slice to send: which part, its round (-1: none) and how many tensor
// bytes follow it in the payload (0 for a pull request), and how they are
// encoded (0: raw; else a ps::compression::CompressionMode of float32 data).
struct SliceSpec {
  PartInfo info;
  int64_t round = -1;
  size_t data_bytes = 0;
  uint8_t encoding = 0;
  int adopt_from = -1;  // TensorSlice.adopt_from: a push to a new copy of the part
  optim::UpdateNumbers numbers = {};  // TensorSlice.learning_rate / rescale_grad: worker 0's, for its push's round
};

// A frame under construction: message() once the payload is filled in.
struct EncodedData {
  Message message;
  // Per slice, where its data_bytes go (nullptr for none); 16-byte aligned
  // relative to the message body.
  std::vector<uint8_t*> slice_data;
};

// The slice tables of a message under construction (in the order of the
// specs) and their payload layout: make the message with payload_bytes,
// then placed() says where each slice's bytes go. For the typed messages
// that carry slices beside other fields (OptimizerState, PartState).
struct SliceTables {
  std::vector<flatbuffers::Offset<wire::TensorSlice>> tables;
  std::vector<size_t> offsets;
  size_t payload_bytes = 0;
};
SliceTables write_slices(flatbuffers::FlatBufferBuilder& fbb, const std::vector<SliceSpec>& slices);
EncodedData placed(Message message, uint8_t* payload, const std::vector<SliceSpec>& slices,
                   const SliceTables& tables);

// may_resend: DataRequest.may_resend (PS_RESEND).
EncodedData encode_data_request(wire::DataOp op, int worker_rank, const std::vector<SliceSpec>& slices,
                                const std::string& text = {}, double number = 0, bool may_resend = false);
// message: free text on success; round: DataReply.round (Join's answer).
EncodedData encode_data_reply(const std::vector<SliceSpec>& slices, const std::string& message = {},
                              int64_t round = -1);
// A worker joining the running job (the Join message): the question of the
// lowest dist_sync round it may join at, answered with DataReply.round; and
// its join from round on, in the name of its process (pid > 0).
Message encode_join_question(int worker_rank);
Message encode_join(int worker_rank, int64_t round, int64_t pid);

// The answer to a push whose slices for new copies are kept there until the
// copies are filled (DataReply.held).
Message encode_held_push_reply();
// An error answer to a data request (also used for a failure half-way).
Message encode_data_error(core::ErrorCode code, const std::string& message);

// A received slice, checked: valid dtype, shape within limits, 0 <= begin <
// end <= numel, and data bytes inside the payload that are either none or
// exactly the part's size. Error(kProtocol) naming what is wrong.
struct DecodedSlice {
  PartInfo info;
  int64_t round = -1;
  const uint8_t* data = nullptr;  // in place inside the frame's message
  size_t data_bytes = 0;
  // 0: data_bytes is the part's size. Else the compression mode of the
  // (float32) part's encoded bytes, whose size the codec checks; possibly 0
  // bytes (a threshold encoding that sends nothing) with data null.
  uint8_t encoding = 0;
  // >= 0: a push to a new copy of the part, held now by that server
  // (TensorSlice.adopt_from); unchecked here (the store checks it).
  int adopt_from = -1;
  // TensorSlice.learning_rate / rescale_grad as sent; unchecked here (the
  // server checks who sent them and their values).
  optim::UpdateNumbers numbers;
};
DecodedSlice decode_slice(const Frame& frame, const wire::TensorSlice* slice);

// The size in bytes of a part (end - begin elements of its dtype).
size_t part_bytes(const PartInfo& info);

}  // namespace dt::ps
