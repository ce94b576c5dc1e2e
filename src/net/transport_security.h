// Who may speak on a job's connections (issue 18): the job's shared secret,
// which both ends of every connection prove they hold before anything else is
// acted on (net/auth_handshake.h), and optional TLS for tcp, which
// also hides the bytes from the network.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

namespace dt::net {

// 256 random bits shared by every node of one job and nobody else
// (DT_JOB_SECRET, DT_JOB_SECRET_FILE; dtrun makes one per job).
using JobSecret = std::array<uint8_t, 32>;

// PEM files for tls+tcp://. All three or none.
struct TlsFiles {
  std::string cert_file;  // this node's certificate, signed by ca_file's CA
  std::string key_file;   // its private key
  std::string ca_file;    // every peer's certificate must chain to this CA
  bool enabled() const { return !cert_file.empty() || !key_file.empty() || !ca_file.empty(); }
};

struct TransportSecurity {
  // No secret: anyone who reaches a port may speak (ps-lite's behaviour;
  // one warning line at start-up says so).
  std::optional<JobSecret> secret;
  TlsFiles tls;
};

}  // namespace dt::net
