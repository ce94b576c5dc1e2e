#include "core/status_file.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "core/error.h"
#include "core/log.h"
#include "core/parameter_table.h"

namespace dt::core {

namespace {

bool is_set(const char* text) { return text != nullptr && *text != '\0'; }

// DT_STATUS_EVERY_S's seconds; fallback when unset.
double every_from_environment(double fallback) {
  const char* text = read_parameter("DT_STATUS_EVERY_S");
  if (!is_set(text)) return fallback;
  char* end = nullptr;
  errno = 0;
  const double every_s = std::strtod(text, &end);
  if (errno != 0 || end == text || *end != '\0' || !(every_s > 0) || every_s > 1e6) {
    throw Error(ErrorCode::kInvalidArgument,
                std::string("DT_STATUS_EVERY_S=\"") + text + "\" is not a positive number of seconds");
  }
  return every_s;
}

}  // namespace

std::unique_ptr<StatusFile> StatusFile::from_environment(std::string facility) {
  const char* path = read_parameter("DT_STATUS_FILE");
  if (!is_set(path)) return nullptr;
  return std::make_unique<StatusFile>(path, every_from_environment(1), std::move(facility));
}

bool StatusFile::relayed_from_environment() {
  if (is_set(read_parameter("DT_STATUS_FILE"))) return false;
  return every_from_environment(0) > 0;
}

StatusFile::StatusFile(std::string path, double every_s, std::string facility)
    : path_(std::move(path)),
      every_(std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(every_s))),
      facility_(std::move(facility)) {}

void StatusFile::write(const std::string& line, Clock::time_point now) {
  written_ = now;
  const std::string tmp = path_ + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << line << "\n";
    if (!out) {
      log(LogLevel::kDebug, facility_, "cannot write DT_STATUS_FILE " + tmp);
      return;
    }
  }
  if (std::rename(tmp.c_str(), path_.c_str()) != 0) {
    log(LogLevel::kDebug, facility_, "cannot rename " + tmp + " to DT_STATUS_FILE " + path_);
  }
}

}  // namespace dt::core
