#include "ps/transport/data_codec.h"

#include <cstring>
#include <string>

#include "core/dtype.h"

namespace dt::ps {

using core::Error;
using core::ErrorCode;

namespace {

size_t align_up(size_t n) { return (n + kPayloadAlignment - 1) / kPayloadAlignment * kPayloadAlignment; }

size_t fb_capacity(const std::vector<SliceSpec>& slices, size_t text) { return 128 + text + slices.size() * 128; }

}  // namespace

SliceTables write_slices(flatbuffers::FlatBufferBuilder& fbb, const std::vector<SliceSpec>& slices) {
  SliceTables out;
  out.tables.reserve(slices.size());
  for (const SliceSpec& s : slices) {
    const size_t offset = s.data_bytes == 0 ? 0 : align_up(out.payload_bytes);
    auto shape = fbb.CreateVector(s.info.shape.data(), s.info.shape.ndim());
    out.tables.push_back(wire::CreateTensorSlice(fbb, s.info.part.key, static_cast<uint64_t>(s.info.part.begin),
                                                 static_cast<uint64_t>(s.info.part.end),
                                                 static_cast<int8_t>(s.info.dtype), shape, s.round, offset,
                                                 s.data_bytes, s.encoding, s.adopt_from,
                                                 wire_number(s.numbers.learning_rate),
                                                 wire_number(s.numbers.rescale_grad)));
    out.offsets.push_back(offset);
    if (s.data_bytes != 0) out.payload_bytes = offset + s.data_bytes;
  }
  return out;
}

EncodedData placed(Message message, uint8_t* payload, const std::vector<SliceSpec>& slices,
                   const SliceTables& tables) {
  EncodedData out{std::move(message), {}};
  out.slice_data.reserve(slices.size());
  for (size_t i = 0; i < slices.size(); ++i) {
    out.slice_data.push_back(slices[i].data_bytes == 0 ? nullptr : payload + tables.offsets[i]);
  }
  return out;
}

size_t part_bytes(const PartInfo& info) {
  return static_cast<size_t>(info.part.end - info.part.begin) * core::dtype_size(info.dtype);
}

EncodedData encode_data_request(wire::DataOp op, int worker_rank, const std::vector<SliceSpec>& slices,
                                const std::string& text, double number, bool may_resend) {
  flatbuffers::FlatBufferBuilder fbb(fb_capacity(slices, text.size()));
  const SliceTables tables = write_slices(fbb, slices);
  auto vector = fbb.CreateVector(tables.tables);
  auto text_offset = text.empty() ? flatbuffers::Offset<flatbuffers::String>() : fbb.CreateString(text);
  uint8_t* payload = nullptr;
  Message msg = make_message(fbb, wire::CreateDataRequest(fbb, op, worker_rank, vector, text_offset, number, may_resend),
                             tables.payload_bytes, &payload);
  return placed(std::move(msg), payload, slices, tables);
}

EncodedData encode_data_reply(const std::vector<SliceSpec>& slices, const std::string& message, int64_t round) {
  flatbuffers::FlatBufferBuilder fbb(fb_capacity(slices, message.size()));
  const SliceTables tables = write_slices(fbb, slices);
  auto vector = fbb.CreateVector(tables.tables);
  auto text = message.empty() ? flatbuffers::Offset<flatbuffers::String>() : fbb.CreateString(message);
  uint8_t* payload = nullptr;
  Message msg = make_message(fbb, wire::CreateDataReply(fbb, 0, text, vector, round), tables.payload_bytes, &payload);
  return placed(std::move(msg), payload, slices, tables);
}

Message encode_join_question(int worker_rank) {
  flatbuffers::FlatBufferBuilder fbb(64);
  return make_message(fbb, wire::CreateJoin(fbb, worker_rank, true));
}

Message encode_join(int worker_rank, int64_t round, int64_t pid) {
  flatbuffers::FlatBufferBuilder fbb(64);
  return make_message(fbb, wire::CreateJoin(fbb, worker_rank, false, round, pid));
}

Message encode_held_push_reply() {
  flatbuffers::FlatBufferBuilder fbb(64);
  return make_message(fbb, wire::CreateDataReply(fbb, 0, 0, 0, -1, true));
}

Message encode_data_error(ErrorCode code, const std::string& message) {
  flatbuffers::FlatBufferBuilder fbb(64 + message.size());
  auto text = fbb.CreateString(message);
  return make_message(fbb, wire::CreateDataReply(fbb, static_cast<int>(code), text));
}

DecodedSlice decode_slice(const Frame& frame, const wire::TensorSlice* slice) {
  if (slice == nullptr) throw Error(ErrorCode::kProtocol, "a data message holds a null slice");
  const std::string what = "slice of key " + std::to_string(slice->key());
  if (!core::is_valid_dtype(slice->dtype())) {
    throw Error(ErrorCode::kProtocol, what + ": unknown dtype " + std::to_string(slice->dtype()));
  }
  // The Verifier checks the alignment of a vector's length, not of its
  // elements: a peer can place the int64 dims 4 bytes off their alignment,
  // so they are copied out rather than read through an int64_t pointer.
  const auto* dims = slice->shape();
  std::vector<int64_t> shape(dims ? dims->size() : 0);
  for (size_t i = 0; i < shape.size(); ++i) {
    int64_t dim;
    std::memcpy(&dim, dims->Data() + i * sizeof dim, sizeof dim);
    shape[i] = flatbuffers::EndianScalar(dim);
  }
  DecodedSlice out;
  try {
    out.info.shape = core::Shape(shape);
  } catch (const Error& e) {
    throw Error(ErrorCode::kProtocol, what + ": bad shape: " + e.what());
  }
  out.info.dtype = static_cast<core::DType>(slice->dtype());
  const uint64_t numel = static_cast<uint64_t>(out.info.shape.numel());
  if (slice->part_begin() >= slice->part_end() || slice->part_end() > numel) {
    throw Error(ErrorCode::kProtocol, what + ": part [" + std::to_string(slice->part_begin()) + ", " +
                                          std::to_string(slice->part_end()) + ") is not inside " +
                                          std::to_string(numel) + " elements");
  }
  out.info.part = PartKey{slice->key(), static_cast<int64_t>(slice->part_begin()),
                          static_cast<int64_t>(slice->part_end())};
  out.round = slice->round();
  out.data_bytes = slice->data_bytes();
  out.encoding = slice->encoding();
  out.adopt_from = slice->adopt_from();
  out.numbers.learning_rate = read_number(slice->learning_rate());
  out.numbers.rescale_grad = read_number(slice->rescale_grad());
  if (out.encoding != 0 && out.info.dtype != core::DType::kFloat32) {
    throw Error(ErrorCode::kProtocol, what + ": encoding " + std::to_string(out.encoding) + " of a " +
                                          core::dtype_name(out.info.dtype) + " part (only float32 is compressed)");
  }
  if (out.data_bytes != 0) {
    if (out.encoding == 0 && out.data_bytes != part_bytes(out.info)) {
      throw Error(ErrorCode::kProtocol, what + ": " + std::to_string(out.data_bytes) + " data bytes for a part of " +
                                            std::to_string(part_bytes(out.info)));
    }
    out.data = frame.slice_data(*slice);
  }
  return out;
}

}  // namespace dt::ps
