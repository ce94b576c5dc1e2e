// A server's optimizer state on the wire: named arrays, each a whole array
// (key 0, its dtype and shape) with its bytes in the payload and its name
// in a [string] beside it. The GetOptimizerState request, the
// OptimizerState message (GetOptimizerState's answer and worker 0's
// request restoring the state), the PartState request, and the reading of
// named arrays that PartStateReply carries too. Pure functions; any thread.
#pragma once

#include <memory>
#include <string>

#include "core/context.h"
#include "core/safetensors.h"
#include "ps/transport/data_codec.h"
#include "ps/transport/frame.h"
#include "ps/transport/message.h"

namespace dt::ps {

Message encode_get_optimizer_state(int worker_rank);
// worker_rank: the restoring worker's; -1 for a server's answer.
Message encode_optimizer_state(int worker_rank, const core::NamedArrays& arrays);

// A server filling a new copy asks for a part's state, in its own name
// (server_rank): part's round is the round the part must have applied.
Message encode_part_state_request(int server_rank, const SliceSpec& part);

// The arrays named by names, copied into context cpu, checked: as many
// names as arrays, each array whole (part [0, numel) of its shape), its
// bytes exactly its size, unencoded. Error(kProtocol) naming what (e.g. "a
// part's state") otherwise.
core::NamedArrays read_named_arrays(const Frame& frame,
                                    const flatbuffers::Vector<flatbuffers::Offset<flatbuffers::String>>* names,
                                    const flatbuffers::Vector<flatbuffers::Offset<wire::TensorSlice>>* arrays,
                                    const std::shared_ptr<core::Context>& cpu, const std::string& what);

}  // namespace dt::ps
