#include "ps/transport/state_codec.h"

#include <cstring>
#include <utility>
#include <vector>


namespace dt::ps {

using core::Error;
using core::ErrorCode;

Message encode_get_optimizer_state(int worker_rank) {
  flatbuffers::FlatBufferBuilder fbb(64);
  return make_message(fbb, wire::CreateGetOptimizerState(fbb, worker_rank));
}

Message encode_optimizer_state(int worker_rank, const core::NamedArrays& arrays) {
  std::vector<SliceSpec> specs;
  std::vector<std::string> names;
  for (const auto& [name, array] : arrays) {
    specs.push_back(SliceSpec{
        PartInfo{PartKey{0, 0, static_cast<int64_t>(array.size())}, array.dtype(), array.shape()}, -1, array.nbytes()});
    names.push_back(name);
  }
  flatbuffers::FlatBufferBuilder fbb(128 + arrays.size() * 160);
  const SliceTables tables = write_slices(fbb, specs);
  auto vector = fbb.CreateVector(tables.tables);
  auto name_vector = fbb.CreateVectorOfStrings(names);
  uint8_t* payload = nullptr;
  Message message = make_message(fbb, wire::CreateOptimizerState(fbb, worker_rank, name_vector, vector),
                                 tables.payload_bytes, &payload);
  EncodedData out = placed(std::move(message), payload, specs, tables);
  for (size_t i = 0; i < arrays.size(); ++i) {
    if (specs[i].data_bytes != 0) std::memcpy(out.slice_data[i], arrays[i].second.data(), specs[i].data_bytes);
  }
  return std::move(out.message);
}

Message encode_part_state_request(int server_rank, const SliceSpec& part) {
  flatbuffers::FlatBufferBuilder fbb(256);
  const SliceTables tables = write_slices(fbb, {part});
  return make_message(fbb, wire::CreatePartState(fbb, server_rank, tables.tables[0]));
}

core::NamedArrays read_named_arrays(const Frame& frame,
                                    const flatbuffers::Vector<flatbuffers::Offset<flatbuffers::String>>* names,
                                    const flatbuffers::Vector<flatbuffers::Offset<wire::TensorSlice>>* arrays,
                                    const std::shared_ptr<core::Context>& cpu, const std::string& what) {
  const size_t count = arrays ? arrays->size() : 0;
  if ((names ? names->size() : 0) != count) {
    throw Error(ErrorCode::kProtocol, what + ": " + std::to_string(names ? names->size() : 0) + " names for " +
                                          std::to_string(count) + " arrays");
  }
  core::NamedArrays out;
  out.reserve(count);
  for (flatbuffers::uoffset_t i = 0; i < count; ++i) {
    const DecodedSlice s = decode_slice(frame, arrays->Get(i));
    const auto* name = names->Get(i);
    if (name == nullptr) throw Error(ErrorCode::kProtocol, what + ": a null name");
    if (s.encoding != 0) throw Error(ErrorCode::kProtocol, what + ": an encoded array '" + name->str() + "'");
    // Checked against the bytes that came before anything is sized from
    // the shape claimed.
    if (s.info.part.begin != 0 || s.info.part.end != s.info.shape.numel() || s.data_bytes != part_bytes(s.info)) {
      throw Error(ErrorCode::kProtocol, what + ": an array of " + s.info.shape.to_string() + " carries " +
                                            std::to_string(s.data_bytes) + " bytes");
    }
    core::NDArray array = core::NDArray::empty(cpu, s.info.dtype, s.info.shape);
    if (s.data_bytes != 0) array.copy_from_host(s.data, s.data_bytes);
    out.emplace_back(name->str(), array);
  }
  return out;
}

}  // namespace dt::ps
