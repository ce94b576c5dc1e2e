#include "collective/host/link_watch.h"

namespace dt::collective::host {

void LinkWatch::call_started(const CallHeader& call) {
  std::lock_guard<std::mutex> lock(mutex_);
  call_ = call;
}

void LinkWatch::waiting(int peer, const char* what, Direction direction) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++waits_;
  waiting_ = true;
  peer_ = peer;
  what_ = what;
  direction_ = direction;
}

void LinkWatch::done() {
  std::lock_guard<std::mutex> lock(mutex_);
  waiting_ = false;
}

std::optional<LinkWatch::Waiting> LinkWatch::now() const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!waiting_) return std::nullopt;
  return Waiting{waits_, peer_, what_, call_, direction_};
}

std::string call_text(const CallHeader& call) {
  if (call.seq == 0) return "before its first call";
  std::string text;
  switch (call.kind) {
    case CallKind::kAllReduceDoubling:
      text = "recursive-doubling all-reduce";
      break;
    case CallKind::kAllReduceRing:
      text = "ring all-reduce";
      break;
    case CallKind::kAllReduceHierarchical:
      text = "hierarchical all-reduce";
      break;
    case CallKind::kBroadcast:
      text = "broadcast from rank " + std::to_string(call.root);
      break;
    case CallKind::kBarrier:
      text = "barrier";
      break;
  }
  text += " call " + std::to_string(call.seq);
  const bool all_reduce = call.kind == CallKind::kAllReduceDoubling || call.kind == CallKind::kAllReduceRing ||
                          call.kind == CallKind::kAllReduceHierarchical;
  if (all_reduce) {
    // The allreduce kvstore's tags carry a bucket's first key in the high
    // 32 bits (kvstore/host/fused_all_reduce.cc); 0 is an untagged call.
    if (call.tag != 0) text += " (bucket from key " + std::to_string(call.tag >> 32) + ", ";
    else text += " (";
    text += std::to_string(call.count) + " elements)";
  } else if (call.kind == CallKind::kBroadcast) {
    text += " (" + std::to_string(call.count) + " bytes)";
  }
  return text;
}

}  // namespace dt::collective::host
