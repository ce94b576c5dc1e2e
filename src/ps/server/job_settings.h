// The job's settings as one server hands them to a server rejoining a
// replicated job (DT_SERVER_REPLICATION=1; DataOp ServerSettings's text):
// "name=value" lines for the mode, the optimizer, the compression, the
// optimizer's learning rate and rescale, and the workers that joined the
// running job (a rejoining server missed their Join requests).
//
// Threading: as the store and the agreement they read and change.
#pragma once

#include <string>

#include "ps/server/job_agreement.h"
#include "ps/server/key_store.h"

namespace dt::ps {

// This server's answer.
std::string job_settings_text(const ServerKeyStore& store, const JobAgreement& agreement);
// The rejoined server's side: takes the settings as its own.
// Error(kProtocol) for text it cannot read.
void apply_job_settings(const std::string& text, ServerKeyStore& store, JobAgreement& agreement);

// A pid or rank as peers write it: 1 to 18 decimal digits.
bool is_decimal_id(const std::string& text);

}  // namespace dt::ps
