#include "host_address.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <unistd.h>

#include <memory>
#include <stdexcept>

namespace dt::dtrun {

namespace {
struct IfaddrsDeleter {
  void operator()(ifaddrs* a) const { freeifaddrs(a); }
};
}  // namespace

std::string host_address(const std::string& interface) {
  ifaddrs* raw = nullptr;
  std::unique_ptr<ifaddrs, IfaddrsDeleter> list(getifaddrs(&raw) == 0 ? raw : nullptr);
  for (ifaddrs* a = list.get(); a != nullptr; a = a->ifa_next) {
    if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET) continue;
    if (interface.empty() ? ((a->ifa_flags & IFF_LOOPBACK) || !(a->ifa_flags & IFF_UP)) : interface != a->ifa_name) {
      continue;
    }
    char text[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr, text, sizeof text);
    return text;
  }
  if (!interface.empty()) throw std::runtime_error("--interface " + interface + " has no IPv4 address on this host");
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  return name;
}

}  // namespace dt::dtrun
