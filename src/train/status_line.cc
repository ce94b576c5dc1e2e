#include "train/status_line.h"

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace dt::train {

std::string format_status(const StatusNumbers& n) {
  char line[256];
  std::snprintf(line, sizeof line,
                "steps=%" PRId64 " images=%" PRId64 " bytes_sent=%" PRIu64 " bytes_received=%" PRIu64
                " compute_s=%.3f exchange_s=%.3f wall_s=%.3f",
                n.steps, n.images, n.traffic.bytes_sent, n.traffic.bytes_received, n.compute_s, n.exchange_s,
                n.wall_s);
  return line;
}

bool parse_status(const std::string& line, StatusNumbers& n) {
  StatusNumbers read;
  std::istringstream words(line);
  std::string word;
  int found = 0;
  while (words >> word) {
    const size_t eq = word.find('=');
    if (eq == std::string::npos) return false;
    const std::string name = word.substr(0, eq);
    const char* value = word.c_str() + eq + 1;
    char* end = nullptr;
    errno = 0;
    if (name == "steps" || name == "images") {
      (name == "steps" ? read.steps : read.images) = std::strtoll(value, &end, 10);
    } else if (name == "bytes_sent" || name == "bytes_received") {
      (name == "bytes_sent" ? read.traffic.bytes_sent : read.traffic.bytes_received) = std::strtoull(value, &end, 10);
    } else if (name == "compute_s" || name == "exchange_s" || name == "wall_s") {
      (name == "compute_s" ? read.compute_s : name == "exchange_s" ? read.exchange_s : read.wall_s) =
          std::strtod(value, &end);
    } else {
      continue;  // a later writer's word: skipped
    }
    if (errno != 0 || end == value || *end != '\0') return false;
    ++found;
  }
  if (found < 7) return false;
  n = read;
  return true;
}

}  // namespace dt::train
