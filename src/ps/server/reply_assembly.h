// A server's replies: a data request's pushes and pulls run against the
// store and their reply leaves once every slice is done (at once, or when a
// held push is consumed or a dist_sync pull's round applies); a part's
// state for a new copy (PartStateReply).
//
// Pulled slices carry what the store answered: a dist_sync round's sum
// encoded once (TensorSlice.encoding set) when the store's pulls are
// compressed, otherwise the value in full. A reply whose pulls all go in
// full is sized from the parts as stored, never from what the request
// claims; a push-only request whose slices were kept at a new copy still
// being filled says so (DataReply.held).
//
// Threading: any thread; every reply is sent exactly once, by whichever
// thread finishes the request's last piece.
#pragma once

#include <optional>
#include <utility>
#include <vector>

#include "core/safetensors.h"
#include "ps/compression/gradient_codec.h"
#include "ps/server/key_store.h"
#include "ps/transport/data_codec.h"
#include "ps/transport/message.h"
#include "ps/transport/request_server.h"

namespace dt::ps {

// Push and/or pull every slice for worker; codec: the job's (pushed slices
// with TensorSlice.encoding set are decoded with it, then summed as any
// push). resent: PS_RESEND may have sent the pushes before.
void push_pull(ServerKeyStore& store, int worker, const std::vector<DecodedSlice>& slices, bool push, bool pull,
               const compression::GradientCodec* codec, const RequestServer::Reply& reply, bool resent);

// A part's state (the PartStateReply message): the value; the optimizer's
// arrays; with compressed pulls, the residual and the round's encoding;
// numbers: the source's learning rate and rescale, when it has an optimizer.
Message part_state_reply(const PartInfo& info, const PartState& state,
                         const std::optional<std::pair<double, double>>& numbers);

}  // namespace dt::ps
