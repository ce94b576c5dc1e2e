// The rendezvous every collective is set up through, injected as a function
// (as gloo's Store): given this rank's blob, every rank's blob indexed by
// rank. In a job it is ps::ClusterMember::allgather through the scheduler;
// in tests a plain function over threads. The collectives know nothing of
// the parameter server's roles.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

namespace dt::collective {

using Exchange = std::function<std::vector<std::vector<uint8_t>>(const std::vector<uint8_t>&)>;

}  // namespace dt::collective
