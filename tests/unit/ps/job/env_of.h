// An EnvLookup over a fixed set of variables, so a test describes the
// environment it reads without touching the process's own.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "ps/job/job_config.h"

namespace dt::ps {

inline EnvLookup env_of(std::map<std::string, std::string> vars) {
  return [vars](const char* name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

}  // namespace dt::ps
