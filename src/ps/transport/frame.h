// The codec every message goes through: a FlatBuffers Envelope plus an
// optional payload area, framed inside one nng message body.
//
// Body layout (all offsets relative to the start of the body):
//   [0, 4)          uint32 little-endian: size F of the FlatBuffer
//   [4, 4 + F)      the Envelope FlatBuffer (file identifier "DTPS")
//   [4 + F, P)      zero padding, P = round_up(4 + F, 16)
//   [P, size)       the payload area: tensor bytes, addressed by
//                   TensorSlice.data_offset/data_bytes relative to P
// A body of exactly 4 + F bytes has no payload. Tensor bytes are written once,
// straight into the nng message (encode_frame returns where), and read in place
// by the receiver (Frame::slice_data). P is 16-aligned relative to the body;
// in memory nng bodies start 4 bytes past an 8-byte boundary, so read elements
// with memcpy (or copy into aligned storage) rather than casting the pointer.
#pragma once

#include <flatbuffers/flatbuffers.h>

#include <cstdint>
#include <memory>
#include <string>

#include "core/error.h"
#include "ps/transport/message.h"
#include "ps/transport/protocol_generated.h"

namespace dt::ps {

// Bumped whenever protocol.fbs changes in a way an older peer would misread.
// 2: TensorSlice.encoding (compressed pushes), which a version-1 peer
// would read as raw elements. 3: encoded slices in pull replies (compressed
// pulls), which a version-2 worker would copy as raw elements. 4: the
// Join data op (a worker joining a running job) and Barrier.regroup (an
// all-reduce job's survivors meeting), which a version-3 scheduler would
// take for barrier 0. 5: TensorSlice.adopt_from (a push to a new copy of a
// part), which a version-4 server would take for an ordinary push, and the
// PartState data op and Heartbeat.copies_restored that go with it. 6:
// HeartbeatReply.rejoined (a server rejoining a replicated job), which a
// version-5 worker would not route to, the ServerSettings data op, and
// DataReply.held (a push answered at a new copy still being filled). 7:
// TensorSlice.learning_rate / rescale_grad (worker 0's numbers for the round
// it pushes), which a version-6 server would drop, applying the round with
// whatever setting reached it last, and the joined line of ServerSettings'
// answer, which a version-6 server would refuse. 8: Barrier.admission
// (workers joining an all-reduce job), which a version-7 scheduler would
// take for a regroup of the workers in the job. 9: typed fault-tolerance
// messages, each its own table of the Body union (Join, ServerSettings and
// its ServerSettingsReply, GetOptimizerState and OptimizerState, PartState
// and its PartStateReply, Regroup and Admission) in the place of data ops
// with text fields and flags on Barrier, which a version-8 peer rejects as
// a body type it does not know. 10: 2bit's default form carries the mean
// magnitude of what it sends before its codes (ps/compression/
// gradient_codec.h), which a version-9 peer would take for a wrong length.
// 11: Heartbeat.stalled_on and HeartbeatReply.stalled_on (the stall
// inspector's workers a server's rounds wait for), which a version-10 peer
// would drop, its workers' stall warnings naming nobody. 12:
// Heartbeat.worker_status and server_status (dtrun's live summary relayed
// through the scheduler), which a version-11 scheduler would drop, its
// dtrun's summary showing no step.
constexpr uint32_t kProtocolVersion = 12;
constexpr size_t kPayloadAlignment = 16;
constexpr size_t kFrameHeaderBytes = 4;

// Offset of the payload area for a FlatBuffer of fb_size bytes.
constexpr size_t payload_offset(size_t fb_size) {
  return (kFrameHeaderBytes + fb_size + kPayloadAlignment - 1) / kPayloadAlignment * kPayloadAlignment;
}

// Frames a finished FlatBuffer (fb, fb_size) and reserves payload_bytes of
// payload after it. *payload (when payload is not null) points at the
// reserved, uninitialised payload area: nullptr when payload_bytes is 0.
Message encode_frame(const uint8_t* fb, size_t fb_size, size_t payload_bytes, uint8_t** payload);

// Finishes fbb with an Envelope{kProtocolVersion, body} and frames it.
// T is one of the tables of the wire::Body union.
template <typename T>
Message make_message(flatbuffers::FlatBufferBuilder& fbb, flatbuffers::Offset<T> body,
                     size_t payload_bytes = 0, uint8_t** payload = nullptr) {
  auto envelope = wire::CreateEnvelope(fbb, kProtocolVersion, wire::BodyTraits<T>::enum_value, body.Union());
  wire::FinishEnvelopeBuffer(fbb, envelope);
  return encode_frame(fbb.GetBufferPointer(), fbb.GetSize(), payload_bytes, payload);
}

// An ErrorReply carrying code (as its dt_status value) and message.
Message make_error_reply(core::ErrorCode code, const std::string& message);
// An Ack.
Message make_ack();

// A received message that passed the checks: framing, file identifier,
// protocol version, and the FlatBuffers Verifier over the whole Envelope.
// Move-only; keeps the Message alive so the payload can be read in place.
class Frame {
 public:
  // Throws core::Error(kProtocol) for anything malformed (the text says what)
  // and for a protocol version other than kProtocolVersion (naming both).
  static Frame parse(Message msg);
  // The same checks over a message the caller keeps (a look before deciding
  // who handles it): valid while msg lives unchanged; message() is empty.
  static Frame borrow(const Message& msg);

  const wire::Envelope& envelope() const { return *envelope_; }
  wire::Body type() const { return envelope_->body_type(); }
  // The body as T, or nullptr when the body is of another type.
  template <typename T>
  const T* body() const {
    return envelope_->body_as<T>();
  }
  // The body as T; Error(kProtocol) "expected <T>, got <type>" otherwise.
  // An ErrorReply body is thrown instead as Error(its status, its message),
  // so callers expecting a reply write `frame.expect<wire::NodeTable>()`.
  template <typename T>
  const T& expect() const {
    if (const T* b = body<T>()) return *b;
    throw_unexpected(wire::BodyTraits<T>::enum_value);
  }

  const uint8_t* payload() const { return payload_; }
  size_t payload_size() const { return payload_size_; }
  // The slice's bytes inside the payload area; Error(kProtocol) when
  // data_offset/data_bytes fall outside it.
  const uint8_t* slice_data(const wire::TensorSlice& slice) const;

  // The underlying message (pipe_id() tells the connection it came on).
  const Message& message() const { return msg_; }

 private:
  Frame() = default;
  // parse() and borrow(): everything but taking the message.
  static Frame check(const Message& msg);
  [[noreturn]] void throw_unexpected(wire::Body expected) const;

  Message msg_;
  // Set only when the FlatBuffer in the body was not 8-byte aligned in memory:
  // an aligned copy of the (small) FlatBuffer part; the payload is never copied.
  std::unique_ptr<uint64_t[]> aligned_fb_;
  const wire::Envelope* envelope_ = nullptr;
  const uint8_t* payload_ = nullptr;
  size_t payload_size_ = 0;
};

// The name of a body type ("Register", ...), for messages.
const char* body_name(wire::Body type);

// An error as the peer should see it: ErrorCode <-> dt_status value.
core::Error error_from_reply(const wire::ErrorReply& reply);

}  // namespace dt::ps
