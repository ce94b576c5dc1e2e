// The job's secret (issue 18): 256 random bits that every process of one
// job holds and nothing else does, so that a stranger who reaches the job's
// ports can neither join it nor speak to its nodes (docs/security.md).
// dtrun makes a fresh one per job unless the user brought their own; it
// travels in the environment of local processes, mpirun and srun (never on
// a command line), and over ssh as the first line of each session's stdin.
#pragma once

#include <string>

#include "environment.h"

namespace dt::dtrun {

// {"DT_JOB_SECRET": 64 hex digits from getrandom(2)}; empty when inherited
// already names a secret (DT_JOB_SECRET or DT_JOB_SECRET_FILE), which then
// passes on unchanged. Throws std::runtime_error when the system gives no
// random bytes.
EnvMap job_secret_environment(const EnvMap& inherited);

}  // namespace dt::dtrun
