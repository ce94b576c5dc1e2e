// A dist kvstore's optimizer state (update_on_kvstore) as the servers hold
// it, part by part, and as a checkpoint holds it, key by key:
// "<prefix>num_update", "<prefix>learning_rate" and "<prefix><key>.<slot>".
// The servers name their arrays "<key>/<begin>/<end>.<slot>". Pure
// functions over the messages; DistKVStore runs the exchanges. Any thread.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/context.h"
#include "core/ndarray.h"
#include "core/safetensors.h"
#include "kvstore/kvstore.h"
#include "ps/key_placement.h"
#include "ps/transport/frame.h"

namespace dt::kvstore {

// One server's arrays under its names for them.
using ServerStateArrays = core::NamedArrays;

// A key as the store placed it. The lookup throws for a key the store does
// not hold, as the caller's operation does.
struct PlacedKey {
  const core::Shape& shape;
  const std::vector<ps::PartRange>& parts;
};
using KeyLookup = std::function<PlacedKey(Key key)>;

// A GetOptimizerState reply (an OptimizerState message), read into host
// copies; Error(kProtocol) for arrays it cannot read.
ServerStateArrays read_state_reply(const ps::Frame& reply, const std::shared_ptr<core::Context>& cpu);

// Every server's arrays reassembled per key, in ascending key order, after
// num_update and learning_rate. With replicas a part comes twice, the same
// bytes. Error(kProtocol) for a name no server uses.
core::NamedArrays assemble_optimizer_state(const std::vector<ServerStateArrays>& replies, const KeyLookup& key,
                                           const std::string& prefix, const std::shared_ptr<core::Context>& cpu);

// The inverse: per server, what assemble_optimizer_state would have read
// from it. The scalars go to every server, each key's slots are cut into its
// parts, each part to every server holding it (holders). Arrays without the
// prefix are left out; Error(kInvalidArgument) for a name that is not
// <key>.<slot>, num_update or learning_rate, kShapeMismatch for a slot whose
// size is not its key's.
std::vector<ServerStateArrays> split_optimizer_state(const core::NamedArrays& arrays, const std::string& prefix,
                                                     int num_servers, const KeyLookup& key,
                                                     const std::function<std::vector<int>(int server)>& holders,
                                                     const std::shared_ptr<core::Context>& cpu);

// The OptimizerState request restoring one server's arrays.
ps::Message encode_state_request(int worker_rank, const ServerStateArrays& arrays);

}  // namespace dt::kvstore
