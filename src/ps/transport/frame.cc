#include "ps/transport/frame.h"

#include <cstring>
#include <string>

namespace dt::ps {

using core::Error;
using core::ErrorCode;

namespace {

// Explicit little-endian, independent of the host's byte order.
uint32_t read_u32_le(const uint8_t* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

void write_u32_le(uint8_t* p, uint32_t v) {
  p[0] = static_cast<uint8_t>(v);
  p[1] = static_cast<uint8_t>(v >> 8);
  p[2] = static_cast<uint8_t>(v >> 16);
  p[3] = static_cast<uint8_t>(v >> 24);
}

[[noreturn]] void malformed(const std::string& what) {
  throw Error(ErrorCode::kProtocol, "malformed message: " + what);
}

// Reads protocol_version alone, verifying only the root table and that field,
// so a peer with a newer schema (whose body the full Verifier may reject)
// still gets "version mismatch" rather than "malformed".
uint32_t peek_version(const uint8_t* fb, size_t fb_size) {
  flatbuffers::Verifier verifier(fb, fb_size);
  if (!verifier.VerifyOffset(0)) malformed("bad root offset");
  // The generated Envelope hides its Table base; read the field generically.
  const auto* table = flatbuffers::GetRoot<flatbuffers::Table>(fb);
  if (!table->VerifyTableStart(verifier) ||
      !table->VerifyField<uint32_t>(verifier, wire::Envelope::VT_PROTOCOL_VERSION, alignof(uint32_t))) {
    malformed("bad envelope table");
  }
  return table->GetField<uint32_t>(wire::Envelope::VT_PROTOCOL_VERSION, 0);
}

}  // namespace

Message encode_frame(const uint8_t* fb, size_t fb_size, size_t payload_bytes, uint8_t** payload) {
  if (fb_size > UINT32_MAX) throw Error(ErrorCode::kInvalidArgument, "FlatBuffer of " + std::to_string(fb_size) + " bytes exceeds the 4 GiB frame limit");
  const size_t head = payload_bytes == 0 ? kFrameHeaderBytes + fb_size : payload_offset(fb_size);
  Message msg = Message::with_capacity(head + payload_bytes);
  uint8_t* out = msg.grow(head);
  write_u32_le(out, static_cast<uint32_t>(fb_size));
  std::memcpy(out + kFrameHeaderBytes, fb, fb_size);
  std::memset(out + kFrameHeaderBytes + fb_size, 0, head - kFrameHeaderBytes - fb_size);
  uint8_t* room = payload_bytes == 0 ? nullptr : msg.grow(payload_bytes);
  if (payload != nullptr) *payload = room;
  return msg;
}

Message make_error_reply(ErrorCode code, const std::string& message) {
  flatbuffers::FlatBufferBuilder fbb(64 + message.size());
  auto text = fbb.CreateString(message);
  return make_message(fbb, wire::CreateErrorReply(fbb, static_cast<int>(code), text));
}

Message make_ack() {
  flatbuffers::FlatBufferBuilder fbb(64);
  return make_message(fbb, wire::CreateAck(fbb));
}

Frame Frame::parse(Message msg) {
  Frame frame = check(msg);
  frame.msg_ = std::move(msg);
  return frame;
}

Frame Frame::borrow(const Message& msg) { return check(msg); }

Frame Frame::check(const Message& msg) {
  Frame frame;
  const uint8_t* body = msg.data();
  const size_t size = msg.size();
  if (size < kFrameHeaderBytes) {
    malformed(std::to_string(size) + " bytes, shorter than the " + std::to_string(kFrameHeaderBytes) + "-byte frame header");
  }
  const size_t fb_size = read_u32_le(body);
  if (fb_size > size - kFrameHeaderBytes) {
    malformed("FlatBuffer size " + std::to_string(fb_size) + " exceeds the " + std::to_string(size) + "-byte message");
  }
  // Smallest possible buffer: root offset plus file identifier.
  if (fb_size < sizeof(flatbuffers::uoffset_t) + flatbuffers::kFileIdentifierLength) {
    malformed("FlatBuffer of " + std::to_string(fb_size) + " bytes is too short");
  }
  if (size > kFrameHeaderBytes + fb_size) {
    const size_t offset = payload_offset(fb_size);
    if (offset > size) malformed("payload area starts past the end of the message");
    frame.payload_ = body + offset;
    frame.payload_size_ = size - offset;
  }

  const uint8_t* fb = body + kFrameHeaderBytes;
  // FlatBuffers reads scalars through aligned pointers; nng bodies start 4
  // bytes past an 8-byte boundary, so the FlatBuffer at offset 4 is usually
  // aligned already. Otherwise copy this small part (never the payload).
  if (reinterpret_cast<uintptr_t>(fb) % alignof(uint64_t) != 0) {
    frame.aligned_fb_.reset(new uint64_t[(fb_size + 7) / 8]);
    std::memcpy(frame.aligned_fb_.get(), fb, fb_size);
    fb = reinterpret_cast<const uint8_t*>(frame.aligned_fb_.get());
  }
  if (!flatbuffers::BufferHasIdentifier(fb, wire::EnvelopeIdentifier())) {
    malformed("not a disttrain parameter-server message (file identifier is not \"DTPS\")");
  }
  const uint32_t version = peek_version(fb, fb_size);
  if (version != kProtocolVersion) {
    throw Error(ErrorCode::kProtocol, "protocol version mismatch: the peer speaks version " + std::to_string(version) +
                                          ", this node speaks version " + std::to_string(kProtocolVersion) +
                                          " (run the same disttrain release on every node)");
  }
  flatbuffers::Verifier verifier(fb, fb_size);
  if (!wire::VerifyEnvelopeBuffer(verifier)) malformed("FlatBuffers verification failed");
  frame.envelope_ = wire::GetEnvelope(fb);
  if (frame.envelope_->body_type() == wire::Body::NONE || frame.envelope_->body() == nullptr) {
    malformed("envelope without a body");
  }
  return frame;
}

const uint8_t* Frame::slice_data(const wire::TensorSlice& slice) const {
  const uint64_t offset = slice.data_offset();
  const uint64_t bytes = slice.data_bytes();
  if (offset > payload_size_ || bytes > payload_size_ - offset) {
    malformed("slice of key " + std::to_string(slice.key()) + " addresses bytes [" + std::to_string(offset) + ", " +
              std::to_string(offset) + "+" + std::to_string(bytes) + ") of a " + std::to_string(payload_size_) +
              "-byte payload");
  }
  return payload_ + offset;
}

void Frame::throw_unexpected(wire::Body expected) const {
  if (const auto* error = body<wire::ErrorReply>()) throw error_from_reply(*error);
  throw Error(ErrorCode::kProtocol, std::string("expected a ") + body_name(expected) + " message, got " + body_name(type()));
}

const char* body_name(wire::Body type) {
  const char* name = wire::EnumNameBody(type);
  return name[0] == '\0' ? "unknown" : name;
}

Error error_from_reply(const wire::ErrorReply& reply) {
  const std::string text = reply.message() == nullptr ? std::string("(no message)") : reply.message()->str();
  const int status = reply.status();
  if (status < static_cast<int>(ErrorCode::kInvalidArgument) || status > static_cast<int>(ErrorCode::kUnauthenticated)) {
    return Error(ErrorCode::kRemote, "peer failed with unknown status " + std::to_string(status) + ": " + text);
  }
  return Error(static_cast<ErrorCode>(status), text);
}

}  // namespace dt::ps
