// The job's settings as one server hands them to a server rejoining a
// replicated job (DT_SERVER_REPLICATION=1): the ServerSettings message and
// its ServerSettingsReply (protocol.fbs), each field typed: the mode, the
// optimizer, the compression, the optimizer's learning rate and rescale,
// and the workers that joined the running job (a rejoining server missed
// their Join requests).
//
// Threading: as the store and the agreement they read and change.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ps/server/job_agreement.h"
#include "ps/server/key_store.h"
#include "ps/transport/frame.h"
#include "ps/transport/message.h"

namespace dt::ps {

struct JobSettings {
  std::optional<ServerKeyStore::Mode> mode;  // none: no init reached the server
  std::string optimizer;                     // OptimizerConfig JSON; empty: none
  // With an optimizer: its numbers as last set.
  std::optional<double> learning_rate;
  std::optional<double> rescale_grad;
  std::string compression;                   // CompressionConfig text; empty: none
  std::vector<std::pair<int, int64_t>> joined;  // rank, pid
};

// This server's answer.
JobSettings job_settings_of(const ServerKeyStore& store, const JobAgreement& agreement);
// The rejoined server's side: takes the settings as its own.
// Error(kProtocol) for settings it cannot take (a joined worker outside the
// job, a pid of 0, a number that is not finite).
void apply_job_settings(const JobSettings& settings, ServerKeyStore& store, JobAgreement& agreement);

// The request, in the name of the asking server (rank >= 0).
Message encode_server_settings_request(int server_rank);
Message encode_server_settings_reply(const JobSettings& settings);
// A verified reply read back; Error(kProtocol) for a mode it does not know.
JobSettings decode_server_settings_reply(const wire::ServerSettingsReply& reply);

}  // namespace dt::ps
