// dtrun's -H hostfile through parse_hostfile. dtrun uses no part of the
// library, so its clear error is std::runtime_error, not core::Error.
// Accepted hosts have an address and a port of 0 (ssh's default) or in
// [1, 65535].
#include <stdexcept>
#include <string>

#include "fuzz_support.h"
#include "hostfile.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using dt::fuzz::require;
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const auto hosts = dt::dtrun::parse_hostfile(text, "fuzz-input");
    require(!hosts.empty(), "an accepted hostfile without hosts");
    for (const auto& host : hosts) {
      require(!host.address.empty() && !host.destination.empty(), "a host without an address");
      require(host.port >= 0 && host.port <= 65535, "a port out of range");
      (void)host.text();
    }
    (void)dt::dtrun::server_host(hosts, 3);
    (void)dt::dtrun::worker_host(hosts, 2, 5);
  } catch (const std::runtime_error&) {
  }
  return 0;
}
