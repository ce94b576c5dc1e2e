// --launcher local: scheduler, servers and workers as processes of this host,
// reaching the scheduler on 127.0.0.1.
#pragma once

#include "job.h"

namespace dt::dtrun {

Outcome run_local(Supervisor& supervisor, const JobContext& job);

}  // namespace dt::dtrun
