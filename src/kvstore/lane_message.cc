#include "kvstore/lane_message.h"

#include <cstring>
#include <string>

#include "core/error.h"

namespace dt::kvstore {

using core::Error;
using core::ErrorCode;
using ps::wire::DataOp;

namespace {

// A pushed float32 part, error-compensated and encoded.
std::vector<uint8_t> compress(const RequestPart& part, const ps::compression::GradientCodec& codec,
                              ps::compression::ErrorFeedback* feedback) {
  const size_t n = static_cast<size_t>(part.range.end - part.range.begin);
  std::vector<float> values(n);
  std::memcpy(values.data(), part.src + static_cast<size_t>(part.range.begin) * sizeof(float), n * sizeof(float));
  std::vector<uint8_t> bytes;
  ps::compression::encode_with_feedback(codec, feedback, part.key, part.range.begin, values.data(), n, bytes);
  return bytes;
}

// A pulled part the server sent encoded, decoded into dst (the part's
// float32 elements); Error(kProtocol) when the encoding is not the job's
// mode or its bytes are malformed, dst then untouched.
void decompress(const ps::DecodedSlice& slice, const ps::compression::GradientCodec* codec, float* dst) {
  if (codec == nullptr || static_cast<uint8_t>(codec->config().mode) != slice.encoding) {
    throw Error(ErrorCode::kProtocol, "a server answered a pull of key " + std::to_string(slice.info.part.key) +
                                          " encoded with mode " + std::to_string(slice.encoding) +
                                          ", but this store compresses with " +
                                          (codec ? codec->config().to_string() : std::string("none")));
  }
  const size_t n = static_cast<size_t>(slice.info.part.end - slice.info.part.begin);
  // Checked before anything is written: dst is the caller's (or aliases it).
  std::vector<float> values(n, 0.0f);
  codec->decode_add(slice.data, slice.data_bytes, values.data(), n);
  std::memcpy(dst, values.data(), n * sizeof(float));
}

}  // namespace

ps::EncodedData encode_lane_message(const std::vector<LaneUnit>& units, int worker_rank, bool sync, bool may_resend,
                                    const ps::compression::GradientCodec* codec,
                                    ps::compression::ErrorFeedback* feedback) {
  const DataOp op = units.front().op;
  std::vector<ps::SliceSpec> specs;
  specs.reserve(units.size());
  // Compressed parts' bytes, encoded first: their sizes go into the
  // message; likewise replicated parts' bytes, taken once for both copies.
  std::vector<std::vector<uint8_t>> compressed(units.size());
  std::vector<const std::vector<uint8_t>*> encodings(units.size(), nullptr);
  for (size_t j = 0; j < units.size(); ++j) {
    const RequestPart& part = units[j].part;
    ps::PartInfo info{ps::PartKey{part.key, part.range.begin, part.range.end}, part.dtype, *part.shape};
    ps::SliceSpec spec{info, part.round, part.src ? ps::part_bytes(info) : 0};
    spec.adopt_from = units[j].route.adopt_from;
    if (units[j].op == DataOp::Push || units[j].op == DataOp::PushPull) spec.numbers = part.numbers;
    const bool compresses = codec && part.src && part.dtype == core::DType::kFloat32;
    SharedEncoding* shared = part.src ? units[j].encoding.get() : nullptr;
    if (shared) {
      std::call_once(shared->once, [&] {
        if (compresses) {
          shared->bytes = compress(part, *codec, feedback);
          shared->encoding = static_cast<uint8_t>(codec->config().mode);
        } else {
          const uint8_t* begin = part.src + static_cast<size_t>(part.range.begin) * core::dtype_size(part.dtype);
          shared->bytes.assign(begin, begin + spec.data_bytes);
        }
      });
      encodings[j] = &shared->bytes;
      spec.data_bytes = shared->bytes.size();
      spec.encoding = shared->encoding;
    } else if (compresses) {
      compressed[j] = compress(part, *codec, feedback);
      encodings[j] = &compressed[j];
      spec.data_bytes = compressed[j].size();
      spec.encoding = static_cast<uint8_t>(codec->config().mode);
    }
    specs.push_back(std::move(spec));
  }
  // Servers know the two modes; a "_device" type differs only on the worker.
  ps::EncodedData encoded = ps::encode_data_request(
      op, worker_rank, specs, op == DataOp::Init ? (sync ? "dist_sync" : "dist_async") : std::string(), 0, may_resend);
  for (size_t j = 0; j < units.size(); ++j) {
    const RequestPart& part = units[j].part;
    if (part.src == nullptr || specs[j].data_bytes == 0) continue;
    const uint8_t* from = encodings[j] != nullptr
                              ? encodings[j]->data()
                              : part.src + static_cast<size_t>(part.range.begin) * core::dtype_size(part.dtype);
    std::memcpy(encoded.slice_data[j], from, specs[j].data_bytes);
  }
  return encoded;
}

void read_pull_reply(const ps::Frame& reply, const std::vector<LaneUnit>& units,
                     const ps::compression::GradientCodec* codec) {
  const auto* slices = reply.expect<ps::wire::DataReply>().slices();
  if (slices == nullptr || slices->size() != units.size()) {
    throw Error(ErrorCode::kProtocol, "a server answered " + std::to_string(slices ? slices->size() : 0) +
                                          " slices to a pull of " + std::to_string(units.size()));
  }
  for (size_t j = 0; j < units.size(); ++j) {
    const RequestPart& part = units[j].part;
    const ps::DecodedSlice s = ps::decode_slice(reply, slices->Get(static_cast<flatbuffers::uoffset_t>(j)));
    if (s.info.part.key != part.key || s.info.part.begin != part.range.begin || s.info.part.end != part.range.end ||
        s.info.dtype != part.dtype || (s.data == nullptr && s.encoding == 0)) {
      throw Error(ErrorCode::kProtocol, "a server answered a pull of key " + std::to_string(part.key) +
                                            " with another part");
    }
    uint8_t* dst = part.dst + static_cast<size_t>(part.range.begin) * core::dtype_size(part.dtype);
    if (s.encoding != 0) {
      decompress(s, codec, reinterpret_cast<float*>(dst));
    } else {
      std::memcpy(dst, s.data, s.data_bytes);
    }
  }
}

}  // namespace dt::kvstore
