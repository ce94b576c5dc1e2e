#include "core/status_line.h"

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <type_traits>
#include <variant>
#include <vector>

namespace dt::core {

namespace {

// One word of a line: its name and where its value goes.
struct Field {
  const char* name;
  std::variant<int64_t*, uint64_t*, double*> value;
};

// True when every field was found, each with a whole number of its type.
bool read_fields(const std::string& line, const std::vector<Field>& fields) {
  std::vector<bool> found(fields.size(), false);
  std::istringstream words(line);
  std::string word;
  while (words >> word) {
    const size_t eq = word.find('=');
    if (eq == std::string::npos) return false;
    const std::string name = word.substr(0, eq);
    const char* text = word.c_str() + eq + 1;
    size_t i = 0;
    while (i < fields.size() && name != fields[i].name) ++i;
    if (i == fields.size()) continue;  // a later writer's word: skipped
    char* end = nullptr;
    errno = 0;
    std::visit(
        [&](auto* target) {
          using T = std::remove_pointer_t<decltype(target)>;
          if constexpr (std::is_same_v<T, int64_t>) {
            *target = std::strtoll(text, &end, 10);
          } else if constexpr (std::is_same_v<T, uint64_t>) {
            *target = std::strtoull(text, &end, 10);
          } else {
            *target = std::strtod(text, &end);
          }
        },
        fields[i].value);
    if (errno != 0 || end == text || *end != '\0') return false;
    found[i] = true;
  }
  for (bool f : found) {
    if (!f) return false;
  }
  return true;
}

}  // namespace

std::string format_status(const WorkerStatus& n) {
  char line[256];
  std::snprintf(line, sizeof line,
                "steps=%" PRId64 " images=%" PRId64 " bytes_sent=%" PRIu64 " bytes_received=%" PRIu64
                " compute_s=%.3f exchange_s=%.3f wall_s=%.3f",
                n.steps, n.images, n.traffic.bytes_sent, n.traffic.bytes_received, n.compute_s, n.exchange_s,
                n.wall_s);
  return line;
}

std::string format_status(const ServerStatus& n) {
  char line[256];
  std::snprintf(line, sizeof line,
                "requests=%" PRId64 " bytes_sent=%" PRIu64 " bytes_received=%" PRIu64
                " compute_s=%.3f communicate_s=%.3f waiting_s=%.3f wall_s=%.3f",
                n.requests, n.traffic.bytes_sent, n.traffic.bytes_received, n.compute_s, n.communicate_s,
                n.waiting_s, n.wall_s);
  return line;
}

bool parse_status(const std::string& line, WorkerStatus& n) {
  WorkerStatus read;
  if (!read_fields(line, {{"steps", &read.steps},
                          {"images", &read.images},
                          {"bytes_sent", &read.traffic.bytes_sent},
                          {"bytes_received", &read.traffic.bytes_received},
                          {"compute_s", &read.compute_s},
                          {"exchange_s", &read.exchange_s},
                          {"wall_s", &read.wall_s}})) {
    return false;
  }
  n = read;
  return true;
}

bool parse_status(const std::string& line, ServerStatus& n) {
  ServerStatus read;
  if (!read_fields(line, {{"requests", &read.requests},
                          {"bytes_sent", &read.traffic.bytes_sent},
                          {"bytes_received", &read.traffic.bytes_received},
                          {"compute_s", &read.compute_s},
                          {"communicate_s", &read.communicate_s},
                          {"waiting_s", &read.waiting_s},
                          {"wall_s", &read.wall_s}})) {
    return false;
  }
  n = read;
  return true;
}

std::string status_file_name(const std::string& role, int rank) {
  return role + "-" + std::to_string(rank) + ".status";
}

}  // namespace dt::core
