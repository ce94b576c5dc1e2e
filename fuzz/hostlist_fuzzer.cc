// Slurm compressed host lists (SLURM_JOB_NODELIST) through expand_hostlist.
// What is accepted is at least one host, none of them empty, never more than
// kMaxHostlistHosts.
#include <string>

#include "core/error.h"
#include "fuzz_support.h"
#include "ps/job/hostlist.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using dt::fuzz::require;
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const std::vector<std::string> hosts = dt::ps::expand_hostlist(text);
    require(!hosts.empty() && hosts.size() <= dt::ps::kMaxHostlistHosts, "a host count out of range");
    for (const std::string& host : hosts) require(!host.empty(), "an empty host name");
  } catch (const dt::core::Error&) {
  }
  return 0;
}
