// dtrun --tls: a throw-away public-key infrastructure for one job. A CA made
// for the job signs one certificate that every node of the job presents
// (the library checks the chain, not a name: docs/security.md, "TLS"); the
// CA's key is deleted once it has signed, so nothing else can ever chain to
// that CA. EC P-256 keys, valid 2 days, made by the openssl command line tool.
#pragma once

#include <string>

#include "environment.h"

namespace dt::dtrun {

// Makes dir/tls (mode 700; the files in it 600) and returns DT_TLS_CERT_FILE,
// DT_TLS_KEY_FILE and DT_TLS_CA_FILE naming its files. dir is dtrun's
// private scratch directory, removed with everything in it when dtrun ends.
// Throws std::runtime_error naming the failed openssl step and its output.
EnvMap make_job_tls(const std::string& dir);

}  // namespace dt::dtrun
