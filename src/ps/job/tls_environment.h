// The node's TLS files from the environment every node of a job shares
// (net/tls_config.h says what they are for): DT_TLS_CERT_FILE,
// DT_TLS_KEY_FILE, DT_TLS_CA_FILE, all three or none. dtrun --tls sets them.
#pragma once

#include <string>

#include "net/tls_config.h"
#include "net/transport_security.h"
#include "ps/job/job_config.h"

namespace dt::ps {

// None set: TLS off. Error(kInvalidArgument) naming the variables when only
// some are set, and naming the file for one that is missing, unreadable or
// malformed (checked here, so a node fails at start, not at its first
// connection).
net::TlsFiles tls_files_from(const EnvLookup& env);

// The same checks for files given another way (options->tls_*); the names
// say where each came from in the error text.
void check_tls_files(const net::TlsFiles& files, const net::TlsFileNames& names);

}  // namespace dt::ps
