#include "job_secret.h"

#include <sys/random.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <stdexcept>

namespace dt::dtrun {

EnvMap job_secret_environment(const EnvMap& inherited) {
  for (const char* name : {"DT_JOB_SECRET", "DT_JOB_SECRET_FILE"}) {
    if (auto it = inherited.find(name); it != inherited.end() && !it->second.empty()) return {};
  }
  uint8_t bytes[32];
  size_t got = 0;
  while (got < sizeof bytes) {
    const ssize_t n = getrandom(bytes + got, sizeof bytes - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw std::runtime_error(std::string("no random bytes for the job's secret: ") + std::strerror(errno));
    got += static_cast<size_t>(n);
  }
  static const char kHex[] = "0123456789abcdef";
  std::string hex;
  for (uint8_t b : bytes) {
    hex += kHex[b >> 4];
    hex += kHex[b & 15];
  }
  return {{"DT_JOB_SECRET", hex}};
}

}  // namespace dt::dtrun
