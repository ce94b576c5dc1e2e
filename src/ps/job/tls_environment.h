// The node's TLS files from the environment every node of a job shares
// (ps/transport/tls_config.h says what they are for): DT_TLS_CERT_FILE,
// DT_TLS_KEY_FILE, DT_TLS_CA_FILE, all three or none. dtrun --tls sets them.
#pragma once

#include <string>

#include "ps/job/job_config.h"
#include "ps/transport/tls_config.h"
#include "ps/transport/transport_security.h"

namespace dt::ps {

// None set: TLS off. Error(kInvalidArgument) naming the variables when only
// some are set, and naming the file for one that is missing, unreadable or
// malformed (checked here, so a node fails at start, not at its first
// connection).
TlsFiles tls_files_from(const EnvLookup& env);

// The same checks for files given another way (options->tls_*); the names
// say where each came from in the error text.
void check_tls_files(const TlsFiles& files, const TlsFileNames& names);

}  // namespace dt::ps
