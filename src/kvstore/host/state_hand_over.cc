#include "kvstore/host/state_hand_over.h"

#include <algorithm>
#include <string>

#include "core/dtype.h"
#include "core/error.h"
#include "kvstore/host/group_membership.h"

namespace dt::kvstore {

void hand_over_state_step(collective::host::HostCommunicator& comm, const std::vector<int>& members,
                          const std::vector<int>& joined, bool& holds, std::vector<uint8_t>& state) {
  std::vector<int32_t> holding(members.size(), 0);
  holding[static_cast<size_t>(comm.rank())] = holds ? 1 : 0;
  comm.all_reduce_sum(holding.data(), holding.size(), core::DType::kInt32);
  const auto first = std::find_if(holding.begin(), holding.end(), [](int32_t h) { return h > 0; });
  if (first == holding.end()) {
    throw core::Error(core::ErrorCode::kPeerLost, "allreduce: every worker that was in the job before workers " +
                                                      ranks_text(joined) +
                                                      " joined it was lost before handing them its state");
  }
  const int root = static_cast<int>(first - holding.begin());
  uint64_t size = state.size();
  comm.broadcast(&size, sizeof(size), root);
  state.resize(size);
  if (size > 0) comm.broadcast(state.data(), size, root);
  holds = true;
  int32_t one = 1;
  comm.all_reduce_sum(&one, 1, core::DType::kInt32);
}

}  // namespace dt::kvstore
