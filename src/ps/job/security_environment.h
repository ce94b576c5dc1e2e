// The job's transport security from the environment every node of the job
// shares: DT_JOB_SECRET (64 hex digits: 256 bits) or DT_JOB_SECRET_FILE (a
// file holding them, readable by its owner only, as ssh insists for keys).
// The secret's value never appears in an error or a log line.
#pragma once

#include <string>

#include "net/transport_security.h"
#include "ps/job/job_config.h"

namespace dt::ps {

// Error(kInvalidArgument) naming the variable (never the value) for a
// malformed secret, both variables set, or a file that is missing,
// unreadable or open to group or others.
net::TransportSecurity security_from(const EnvLookup& env);

// 64 lowercase hex digits of 256 fresh random bits (mbedTLS's CTR-DRBG over
// the system's entropy): what dtrun hands each job.
std::string new_job_secret_hex();

}  // namespace dt::ps
