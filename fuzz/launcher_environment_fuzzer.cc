// The job layout a process reads from its launcher's variables
// (resolve_launcher_layout): MX_CONFIG's JSON, the DMLC_*, torchrun, Open
// MPI, PMI and Slurm variables, SLURM_JOB_NODELIST's host list. Input: lines
// NAME=VALUE, each setting one variable (a later line wins), so a seed of one
// line "MX_CONFIG={...}" fuzzes the JSON alone.
#include <map>
#include <optional>
#include <string>

#include "core/error.h"
#include "fuzz_support.h"
#include "ps/job/launcher_environment.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::map<std::string, std::string, std::less<>> variables;
  size_t start = 0;
  while (start < text.size()) {
    const size_t end = std::min(text.find('\n', start), text.size());
    const std::string line = text.substr(start, end - start);
    const size_t equals = line.find('=');
    if (equals != std::string::npos) variables[line.substr(0, equals)] = line.substr(equals + 1);
    start = end + 1;
  }
  const dt::ps::EnvLookup env = [&](const char* name) -> std::optional<std::string> {
    const auto it = variables.find(name);
    if (it == variables.end()) return std::nullopt;
    return it->second;
  };
  try {
    const dt::ps::LauncherLayout layout = dt::ps::resolve_launcher_layout(env);
    if (layout.world_size > 0) {
      dt::fuzz::require(layout.rank >= 0 && layout.rank < layout.world_size, "a rank outside the world");
    }
    (void)layout.summary();
  } catch (const dt::core::Error&) {
  }
  return 0;
}
