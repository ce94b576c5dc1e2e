#include "kvstore/lane_timeline.h"

namespace dt::kvstore {
namespace {

const char* op_name(ps::wire::DataOp op) {
  switch (op) {
    case ps::wire::DataOp::Push:
      return "push";
    case ps::wire::DataOp::Pull:
      return "pull";
    case ps::wire::DataOp::PushPull:
      return "pushpull";
    case ps::wire::DataOp::Init:
      return "init";
    default:
      return "request";
  }
}

}  // namespace

void record_lane_reply(const std::vector<LaneUnit>& units, int server, int64_t sent_us) {
  if (sent_us < 0 || !core::timeline::recording()) return;
  using core::timeline::TraceArg;
  const int64_t now = core::timeline::now_us();
  for (const LaneUnit& unit : units) {
    core::timeline::record_async("kvstore", op_name(unit.op), sent_us, now,
                           TraceArg{"key", static_cast<int64_t>(unit.part.key)},
                           TraceArg{"begin", unit.part.range.begin}, TraceArg{"round", unit.part.round},
                           TraceArg{"server", server});
  }
}

}  // namespace dt::kvstore
