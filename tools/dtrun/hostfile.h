// -H HOSTFILE for --launcher ssh, in the format of MXNet's tools/launch.py
// (dmlc-tracker's ssh.py): one host per line, "host" or "host:port" where
// port is the ssh port (22 when absent). Beyond launch.py: '#' starts a
// comment, surrounding whitespace is ignored, "user@host" names the login,
// and an IPv6 address is written "[addr]" or "[addr]:port" (a bare address
// with several ':' is taken whole, without a port).
//
// Placement, as dmlc-tracker does it: server i runs on host i mod H and
// worker i on host i mod H, the two lists cycled independently from the
// first host, so with H hosts, server 0 and worker 0 share host 0.
#pragma once

#include <string>
#include <vector>

namespace dt::dtrun {

struct SshHost {
  std::string destination;  // what ssh and rsync are given: "host" or "user@host"
  std::string address;      // the host alone, for name resolution
  int port = 0;             // 0: ssh's default (22, or the ssh config's)
  std::string text() const;  // "user@host" or "user@host:port", for messages
};

// Parses a hostfile's text; `source` names it in errors. Throws
// std::runtime_error naming the line for a malformed entry, and when no host
// is listed.
std::vector<SshHost> parse_hostfile(const std::string& text, const std::string& source);

// Reads and parses `path`; throws std::runtime_error when it cannot be read.
std::vector<SshHost> read_hostfile(const std::string& path);

// The host of server or worker `index` (see the placement rule above).
const SshHost& host_for(const std::vector<SshHost>& hosts, int index);

}  // namespace dt::dtrun
