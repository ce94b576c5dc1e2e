#include "kvstore/waiting_messages.h"

namespace dt::kvstore {

namespace {

const char* op_text(ps::wire::DataOp op) {
  switch (op) {
    case ps::wire::DataOp::Push:
      return "push to";
    case ps::wire::DataOp::Pull:
      return "pull from";
    case ps::wire::DataOp::PushPull:
      return "push-pull with";
    case ps::wire::DataOp::Init:
      return "init at";
    default:
      return "request to";
  }
}

}  // namespace

uint64_t WaitingMessages::sent(int server, const std::vector<LaneUnit>& units) {
  std::string what = "a message";
  if (!units.empty()) {
    const LaneUnit& first = units.front();
    what = std::string(op_text(first.op)) + " server " + std::to_string(server) + ": key " +
           std::to_string(first.part.key);
    if (first.part.round >= 0) what += " round " + std::to_string(first.part.round);
    if (units.size() > 1) what += " (+" + std::to_string(units.size() - 1) + " parts)";
  }
  std::lock_guard<std::mutex> lock(mutex_);
  const uint64_t id = next_id_++;
  in_flight_.emplace(id, std::move(what));
  return id;
}

void WaitingMessages::answered(uint64_t id) {
  std::lock_guard<std::mutex> lock(mutex_);
  in_flight_.erase(id);
}

std::vector<core::OpenWait> WaitingMessages::open(const std::vector<int>& waits_for) const {
  std::vector<core::OpenWait> waits;
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& [id, what] : in_flight_) {
    waits.push_back(core::OpenWait{"message " + std::to_string(id), what, waits_for});
  }
  return waits;
}

}  // namespace dt::kvstore
