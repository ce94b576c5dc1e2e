#include "hostfile.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace dt::dtrun {

std::string SshHost::text() const {
  const bool v6 = address.find(':') != std::string::npos;
  std::string host = destination;
  if (v6 && port != 0) {
    const std::string::size_type at = destination.rfind('@');
    const std::string user = at == std::string::npos ? "" : destination.substr(0, at + 1);
    host = user + "[" + address + "]";
  }
  return port == 0 ? host : host + ":" + std::to_string(port);
}

namespace {

std::string trim(const std::string& s) {
  const char* space = " \t\r\n\f\v";
  const std::string::size_type first = s.find_first_not_of(space);
  if (first == std::string::npos) return "";
  return s.substr(first, s.find_last_not_of(space) - first + 1);
}

int parse_port(const std::string& text, const std::string& where) {
  errno = 0;
  char* end = nullptr;
  const long v = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || errno != 0 || *end != '\0' || v < 1 || v > 65535) {
    throw std::runtime_error(where + ": \"" + text + "\" is not a port in [1, 65535]");
  }
  return static_cast<int>(v);
}

SshHost parse_entry(const std::string& entry, const std::string& where) {
  if (entry.find_first_of(" \t") != std::string::npos) {
    throw std::runtime_error(where + ": \"" + entry + "\" holds whitespace; put one host per line");
  }
  SshHost host;
  const std::string::size_type at = entry.rfind('@');
  const std::string user = at == std::string::npos ? "" : entry.substr(0, at + 1);
  std::string rest = at == std::string::npos ? entry : entry.substr(at + 1);
  if (!rest.empty() && rest[0] == '[') {
    const std::string::size_type close = rest.find(']');
    if (close == std::string::npos) throw std::runtime_error(where + ": \"" + entry + "\" lacks the closing ']'");
    host.address = rest.substr(1, close - 1);
    const std::string tail = rest.substr(close + 1);
    if (!tail.empty()) {
      if (tail[0] != ':') throw std::runtime_error(where + ": \"" + entry + "\": only \":port\" may follow ']'");
      host.port = parse_port(tail.substr(1), where);
    }
  } else if (std::count(rest.begin(), rest.end(), ':') == 1) {
    const std::string::size_type colon = rest.find(':');
    host.address = rest.substr(0, colon);
    host.port = parse_port(rest.substr(colon + 1), where);
  } else {
    host.address = rest;  // a name, an IPv4 address, or a bare IPv6 address
  }
  // ssh would take a destination that starts with '-' for an option.
  if (host.address.empty() || host.address[0] == '-' || (!user.empty() && user[0] == '-') || user == "@") {
    throw std::runtime_error(where + ": \"" + entry + "\" is not a host");
  }
  host.destination = user + host.address;
  return host;
}

}  // namespace

std::vector<SshHost> parse_hostfile(const std::string& text, const std::string& source) {
  std::vector<SshHost> hosts;
  std::istringstream in(text);
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    const std::string entry = trim(line.substr(0, line.find('#')));
    if (entry.empty()) continue;
    hosts.push_back(parse_entry(entry, source + ":" + std::to_string(number)));
  }
  if (hosts.empty()) throw std::runtime_error("hostfile " + source + " lists no host");
  return hosts;
}

std::vector<SshHost> read_hostfile(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read hostfile " + path + ": " + std::strerror(errno));
  std::stringstream text;
  text << in.rdbuf();
  return parse_hostfile(text.str(), path);
}

namespace {
const SshHost& cycled(const std::vector<SshHost>& hosts, size_t slot) {
  if (hosts.empty()) throw std::runtime_error("no hosts to place processes on");
  return hosts[slot % hosts.size()];
}
}  // namespace

const SshHost& server_host(const std::vector<SshHost>& hosts, int server) {
  return cycled(hosts, static_cast<size_t>(server));
}

const SshHost& worker_host(const std::vector<SshHost>& hosts, int num_servers, int worker) {
  return cycled(hosts, static_cast<size_t>(num_servers) + static_cast<size_t>(worker));
}

LocalPlace worker_local_place(const std::vector<SshHost>& hosts, int num_servers, int num_workers, int worker) {
  const std::string& mine = worker_host(hosts, num_servers, worker).address;
  LocalPlace place{0, 0};
  for (int w = 0; w < num_workers; ++w) {
    if (worker_host(hosts, num_servers, w).address != mine) continue;
    if (w < worker) ++place.rank;
    ++place.size;
  }
  return place;
}

}  // namespace dt::dtrun
