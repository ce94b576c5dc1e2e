// How a lane's units become one DataRequest, and how the reply to a pull is
// read back into the callers' arrays. Compression (a GradientCodec with its
// error feedback) applies to pushed float32 parts and to pulled parts a
// server sent encoded. Pure functions of their arguments; the caller holds
// the lock that keeps caller memory alive while they run.
#pragma once

#include <vector>

#include "kvstore/request_lanes.h"
#include "ps/compression/error_feedback.h"
#include "ps/compression/gradient_codec.h"
#include "ps/transport/data_codec.h"

namespace dt::kvstore {

// The message carrying units (all of one op) from worker_rank. sync: the
// job's mode, which an init announces. may_resend: marked
// DataRequest.may_resend. codec and feedback: the store's compression, null
// without. A unit with a SharedEncoding takes its bytes from it (encoding
// them there first if no other copy has). Throws core::Error or
// std::bad_alloc.
ps::EncodedData encode_lane_message(const std::vector<LaneUnit>& units, int worker_rank, bool sync, bool may_resend,
                                    const ps::compression::GradientCodec* codec,
                                    ps::compression::ErrorFeedback* feedback);

// Copies a pull's (or pushpull's) reply into the units' dst, decoding parts
// the server sent encoded with codec (null: the store does not compress).
// Error(kProtocol) when the reply does not answer these parts, or an
// encoding is not the store's; a part is written only once it checked out.
void read_pull_reply(const ps::Frame& reply, const std::vector<LaneUnit>& units,
                     const ps::compression::GradientCodec* codec);

}  // namespace dt::kvstore
