// -H HOSTFILE for --launcher ssh, in the format of MXNet's tools/launch.py
// (dmlc-tracker's ssh.py): one host per line, "host" or "host:port" where
// port is the ssh port (22 when absent). Beyond launch.py: '#' starts a
// comment, surrounding whitespace is ignored, "user@host" names the login,
// and an IPv6 address is written "[addr]" or "[addr]:port" (a bare address
// with several ':' is taken whole, without a port).
//
// Placement, as dmlc-tracker's ssh launcher (launch.py --launcher ssh) does
// it: the servers and then the workers take the hosts in turn, one list
// cycled from the first host: server i runs on host i mod H, worker j on
// host (S + j) mod H. With hosts a b c, -s 2 -n 4 puts the servers on a b
// and the workers on c a b c.
#pragma once

#include <string>
#include <vector>

#include "environment.h"

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

// The hosts of server `server` and of worker `worker` of a job with
// `num_servers` servers (see the placement rule above). Throw
// std::runtime_error when hosts is empty.
const SshHost& server_host(const std::vector<SshHost>& hosts, int server);
const SshHost& worker_host(const std::vector<SshHost>& hosts, int num_servers, int worker);

// Worker `worker`'s place among the workers that share its host under that
// placement (the same host: the same address, whatever the login or port):
// with hosts a b and -s 2 -n 4, workers 0 and 2 run on a as local ranks 0
// and 1 of 2. Throws std::runtime_error when hosts is empty.
LocalPlace worker_local_place(const std::vector<SshHost>& hosts, int num_servers, int num_workers, int worker);

}  // namespace dt::dtrun
