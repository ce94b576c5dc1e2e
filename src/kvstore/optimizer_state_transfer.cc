#include "kvstore/optimizer_state_transfer.h"

#include <algorithm>
#include <cstring>
#include <map>

#include "core/error.h"
#include "optim/state_name.h"
#include "ps/transport/state_codec.h"

namespace dt::kvstore {

using core::Error;
using core::ErrorCode;
using core::NDArray;

ServerStateArrays read_state_reply(const ps::Frame& reply, const std::shared_ptr<core::Context>& cpu) {
  const auto& state = reply.expect<ps::wire::OptimizerState>();
  return ps::read_named_arrays(reply, state.names(), state.arrays(), cpu, "a server's optimizer state");
}

core::NamedArrays assemble_optimizer_state(const std::vector<ServerStateArrays>& replies, const KeyLookup& key_of,
                                           const std::string& prefix, const std::shared_ptr<core::Context>& cpu) {
  int64_t num_update = 0;
  NDArray learning_rate;
  std::map<Key, std::map<std::string, NDArray>> per_key;
  for (const auto& list : replies) {
    for (const auto& [name, array] : list) {
      if (name == "num_update") {
        int64_t n = 0;
        array.copy_to_host(&n, sizeof(n));
        num_update = std::max(num_update, n);
        continue;
      }
      if (name == "learning_rate") {
        learning_rate = array;
        continue;
      }
      const auto parsed = optim::parse_state_name(name);
      if (!parsed || !parsed->per_part) {
        throw Error(ErrorCode::kProtocol, "a server reported optimizer state '" + name + "'");
      }
      const Key key = parsed->key;
      const int64_t begin = parsed->begin;
      const std::string& slot = parsed->slot;
      const PlacedKey placed = key_of(key);
      NDArray& full = per_key[key][slot];
      if (slot == "step") {
        full = array;
        continue;
      }
      if (!full.defined()) full = NDArray::empty(cpu, array.dtype(), placed.shape);
      const size_t element = core::dtype_size(array.dtype());
      std::memcpy(static_cast<uint8_t*>(full.data()) + static_cast<size_t>(begin) * element, array.data(),
                  array.nbytes());
    }
  }
  core::NamedArrays out;
  NDArray n = NDArray::empty(cpu, core::DType::kInt64, core::Shape());
  n.copy_from_host(&num_update, sizeof(num_update));
  out.emplace_back(prefix + "num_update", n);
  if (learning_rate.defined()) out.emplace_back(prefix + "learning_rate", learning_rate);
  for (const auto& [key, slots] : per_key) {
    for (const auto& [slot, array] : slots) out.emplace_back(prefix + std::to_string(key) + "." + slot, array);
  }
  return out;
}

std::vector<ServerStateArrays> split_optimizer_state(const core::NamedArrays& arrays, const std::string& prefix,
                                                     int num_servers, const KeyLookup& key_of,
                                                     const std::function<std::vector<int>(int server)>& holders,
                                                     const std::shared_ptr<core::Context>& cpu) {
  std::vector<ServerStateArrays> per_server(static_cast<size_t>(num_servers));
  for (const auto& [name, array] : arrays) {
    if (name.compare(0, prefix.size(), prefix) != 0) continue;
    if (!array.defined()) throw Error(ErrorCode::kInvalidArgument, "load_optimizer_state: " + name + " is empty");
    const std::string rest = name.substr(prefix.size());
    if (rest == "num_update" || rest == "learning_rate") {
      for (auto& list : per_server) list.emplace_back(rest, array);
      continue;
    }
    const auto parsed = optim::parse_state_name(rest);
    if (!parsed || parsed->per_part) {
      throw Error(ErrorCode::kInvalidArgument, "load_optimizer_state: '" + name +
                                                   "' is not <key>.<slot>, num_update or learning_rate");
    }
    const Key key = parsed->key;
    const std::string key_text = std::to_string(key);
    const std::string slot = "." + parsed->slot;  // with its dot
    const PlacedKey placed = key_of(key);
    const bool per_part = slot != ".step";
    if (per_part && static_cast<int64_t>(array.size()) != placed.shape.numel()) {
      throw Error(ErrorCode::kShapeMismatch, "load_optimizer_state: " + name + " has " +
                                                 std::to_string(array.size()) + " elements, key " + key_text +
                                                 " holds " + std::to_string(placed.shape.numel()));
    }
    NDArray host = array;
    if (!array.context()->is_cpu()) {
      host = NDArray::empty(cpu, array.dtype(), array.shape());
      host.copy_from(array);
    }
    const size_t element = core::dtype_size(array.dtype());
    for (const ps::PartRange& part : placed.parts) {
      const std::string part_name = optim::part_state_name(key, part.begin, part.end, parsed->slot);
      NDArray piece = host;
      if (per_part) {
        piece = NDArray::empty(cpu, array.dtype(), core::Shape({part.end - part.begin}));
        piece.copy_from_host(static_cast<const uint8_t*>(host.data()) + static_cast<size_t>(part.begin) * element,
                             piece.nbytes());
      }
      // Every server holding the part keeps the same state.
      for (int holder : holders(part.server)) per_server[static_cast<size_t>(holder)].emplace_back(part_name, piece);
    }
  }
  return per_server;
}

ps::Message encode_state_request(int worker_rank, const ServerStateArrays& arrays) {
  return ps::encode_optimizer_state(worker_rank, arrays);
}

}  // namespace dt::kvstore
